package main

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/IBM/sarama"
)

const groupPartitions = 4

// member is one ConsumerGroup instance: what it consumed and the claims of each generation it had.
type member struct {
	mu       sync.Mutex
	claims   map[int32]map[string][]int32 // generation -> its claims
	values   map[string]int               // value -> times consumed
	first    map[int32]int64              // partition -> first offset consumed
	disorder int
	group    sarama.ConsumerGroup
	cancel   context.CancelFunc
	done     chan struct{}
}

func (m *member) Setup(session sarama.ConsumerGroupSession) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.claims[session.GenerationID()] = session.Claims()
	return nil
}

// Cleanup commits what ConsumeClaim marked, as the end of every generation must.
func (m *member) Cleanup(session sarama.ConsumerGroupSession) error {
	session.Commit()
	return nil
}

func (m *member) ConsumeClaim(session sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	last := int64(-1)
	marked := 0
	for message := range claim.Messages() {
		m.mu.Lock()
		m.values[string(message.Value)]++
		if _, seen := m.first[message.Partition]; !seen {
			m.first[message.Partition] = message.Offset
		}
		if message.Offset <= last {
			m.disorder++
		}
		m.mu.Unlock()
		last = message.Offset
		session.MarkMessage(message, "")
		if marked++; marked%100 == 0 {
			session.Commit()
		}
	}
	return nil
}

func (m *member) generation() (int32, []int32) {
	m.mu.Lock()
	defer m.mu.Unlock()
	latest := int32(-1)
	for generation := range m.claims {
		latest = max(latest, generation)
	}
	partitions := []int32{}
	for _, claimed := range m.claims[latest] {
		partitions = append(partitions, claimed...)
	}
	return latest, partitions
}

func (m *member) consumed(prefix string) (distinct, total int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for value, times := range m.values {
		if strings.HasPrefix(value, prefix) {
			distinct++
			total += times
		}
	}
	return distinct, total
}

func startMember(o options, groupID, topic string) *member {
	config := baseConfig(o)
	config.Consumer.Offsets.Initial = sarama.OffsetOldest
	config.Consumer.Offsets.AutoCommit.Enable = false
	config.Consumer.Group.Heartbeat.Interval = 500 * time.Millisecond
	config.Consumer.Group.Session.Timeout = 10 * time.Second
	config.Consumer.Group.Rebalance.Timeout = 20 * time.Second
	group, err := sarama.NewConsumerGroup(o.brokers, groupID, config)
	check(err, "NewConsumerGroup")
	ctx, cancel := context.WithCancel(context.Background())
	m := &member{claims: map[int32]map[string][]int32{}, values: map[string]int{}, first: map[int32]int64{},
		group: group, cancel: cancel, done: make(chan struct{})}
	go func() {
		for e := range group.Errors() {
			fail("consumer group %s: %v", groupID, e)
		}
	}()
	go func() {
		defer close(m.done)
		for ctx.Err() == nil {
			if err := group.Consume(ctx, []string{topic}, m); err != nil && ctx.Err() == nil {
				fail("Consume: %v", err)
			}
		}
	}()
	return m
}

func (m *member) stop() {
	m.cancel()
	<-m.done
	check(m.group.Close(), "ConsumerGroup Close")
}

func waitFor(o options, what string, done func() bool) {
	for !done() {
		if time.Now().After(deadlineOf(o)) {
			fail("waited in vain for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func sendValues(o options, topic, prefix string, count int) {
	config := baseConfig(o)
	config.Producer.RequiredAcks = sarama.WaitForAll
	producer, err := sarama.NewSyncProducer(o.brokers, config)
	check(err, "NewSyncProducer")
	defer producer.Close()
	batch := []*sarama.ProducerMessage{}
	for i := range count {
		batch = append(batch, &sarama.ProducerMessage{Topic: topic, Key: sarama.StringEncoder(strconv.Itoa(i % 31)),
			Value: sarama.StringEncoder(fmt.Sprintf("%s-%d", prefix, i))})
	}
	check(producer.SendMessages(batch), "SendMessages")
}

// committed: the group's committed offset of each partition of topic, by ListConsumerGroupOffsets.
func committed(admin sarama.ClusterAdmin, groupID, topic string) map[string]int64 {
	partitions := []int32{}
	for p := range int32(groupPartitions) {
		partitions = append(partitions, p)
	}
	response, err := admin.ListConsumerGroupOffsets(groupID, map[string][]int32{topic: partitions})
	check(err, "ListConsumerGroupOffsets")
	if response.Err != sarama.ErrNoError {
		fail("ListConsumerGroupOffsets: %v", response.Err)
	}
	offsets := map[string]int64{}
	for _, p := range partitions {
		block := response.GetBlock(topic, p)
		if block == nil || block.Err != sarama.ErrNoError {
			fail("ListConsumerGroupOffsets %s/%d: %+v", topic, p, block)
		}
		offsets[strconv.Itoa(int(p))] = block.Offset
	}
	return offsets
}

func endOffsets(o options, topic string) map[string]int64 {
	client, err := sarama.NewClient(o.brokers, baseConfig(o))
	check(err, "NewClient")
	defer client.Close()
	ends := map[string]int64{}
	for p := range int32(groupPartitions) {
		end, err := client.GetOffset(topic, p, sarama.OffsetNewest)
		check(err, "GetOffset")
		ends[strconv.Itoa(int(p))] = end
	}
	return ends
}

type groupView struct {
	State        string  `json:"state"`
	ProtocolType string  `json:"protocol_type"`
	Protocol     string  `json:"protocol"`
	Members      int     `json:"members"`
	Assigned     []int32 `json:"assigned"`
	Listed       string  `json:"listed"`
}

func describeGroup(admin sarama.ClusterAdmin, groupID, topic string) groupView {
	described, err := admin.DescribeConsumerGroups([]string{groupID})
	check(err, "DescribeConsumerGroups")
	if len(described) != 1 || described[0].Err != sarama.ErrNoError {
		fail("DescribeConsumerGroups: %+v", described)
	}
	group := described[0]
	view := groupView{State: group.State, ProtocolType: group.ProtocolType, Protocol: group.Protocol,
		Members: len(group.Members), Assigned: []int32{}}
	for _, description := range group.Members {
		assignment, err := description.GetMemberAssignment()
		check(err, "GetMemberAssignment")
		view.Assigned = append(view.Assigned, assignment.Topics[topic]...)
	}
	slices.Sort(view.Assigned)
	listed, err := admin.ListConsumerGroups()
	check(err, "ListConsumerGroups")
	view.Listed = listed[groupID]
	return view
}

// runGroup: two members of one group share a topic's partitions and consume everything once, marking and
// committing; then a new member of the group resumes from the committed offsets. Deleting the group or its
// offsets fails while it runs; once empty, one partition's offset and then the group are deleted.
func runGroup(o options) map[string]any {
	admin := newAdmin(o)
	defer admin.Close()
	topic, groupID := name("sa-group"), name("sa-g")
	createTopic(admin, topic, groupPartitions, nil)

	first := startMember(o, groupID, topic)
	waitFor(o, "the first member's claims", func() bool { _, p := first.generation(); return len(p) > 0 })
	second := startMember(o, groupID, topic)
	waitFor(o, "a generation that shares the partitions", func() bool {
		g1, p1 := first.generation()
		g2, p2 := second.generation()
		return g1 == g2 && len(p1) > 0 && len(p2) > 0 && len(p1)+len(p2) == groupPartitions
	})
	sendValues(o, topic, "first", 2000)
	waitFor(o, "2000 messages consumed", func() bool {
		d1, _ := first.consumed("first-")
		d2, _ := second.consumed("first-")
		return d1+d2 >= 2000
	})
	running := describeGroup(admin, groupID, topic)
	// a running group keeps its offsets and itself
	deleteOffsetRunning := kerr(admin.DeleteConsumerGroupOffset(groupID, topic, 0))
	deleteGroupRunning := kerr(admin.DeleteConsumerGroup(groupID))
	first.stop()
	second.stop()
	d1, t1 := first.consumed("first-")
	d2, t2 := second.consumed("first-")
	_, p1 := first.generation()
	_, p2 := second.generation()
	afterFirst := committed(admin, groupID, topic)
	endsFirst := endOffsets(o, topic)
	empty := describeGroup(admin, groupID, topic)

	sendValues(o, topic, "second", 500)
	third := startMember(o, groupID, topic)
	waitFor(o, "the new member's 500 messages", func() bool { d, _ := third.consumed("second-"); return d >= 500 })
	time.Sleep(time.Second) // so messages consumed again would show
	third.stop()
	d3, t3 := third.consumed("second-")
	_, old := third.consumed("first-")
	resumedAt := map[string]int64{}
	for partition, offset := range third.first {
		resumedAt[strconv.Itoa(int(partition))] = offset
	}
	committedAtEnd, endsAtEnd := committed(admin, groupID, topic), endOffsets(o, topic)
	deleteOffset := kerr(admin.DeleteConsumerGroupOffset(groupID, topic, 0))
	afterDeleteOffset := committed(admin, groupID, topic)
	deleteGroup := kerr(admin.DeleteConsumerGroup(groupID))
	deleteGroupAgain := kerr(admin.DeleteConsumerGroup(groupID))
	return map[string]any{
		"delete_offset_running": deleteOffsetRunning,
		"delete_group_running":  deleteGroupRunning,
		"delete_offset":         deleteOffset,
		"after_delete_offset":   afterDeleteOffset,
		"delete_group":          deleteGroup,
		"delete_group_again":    deleteGroupAgain,
		"members_partitions":    []int{len(p1), len(p2)},
		"distinct_consumed":     d1 + d2,
		"consumed":              t1 + t2,
		"out_of_order":          first.disorder + second.disorder + third.disorder,
		"running":               running,
		"empty":                 empty,
		"committed":             afterFirst,
		"end_offsets":           endsFirst,
		"resumed_at":            resumedAt,
		"resumed_distinct":      d3,
		"resumed_consumed":      t3,
		"resumed_old_messages":  old,
		"committed_at_end":      committedAtEnd,
		"end_offsets_at_end":    endsAtEnd,
	}
}
