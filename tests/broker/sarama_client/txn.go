package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/IBM/sarama"
)

const txnPartitions = 3

// runTxn: a transactional producer commits one transaction, aborts one (with the group offsets each sends
// to the transaction), commits another and leaves a fourth open; read_committed consumers must see only
// the committed messages (the open transaction's after its commit), read_uncommitted ones everything.
func runTxn(o options) map[string]any {
	admin := newAdmin(o)
	defer admin.Close()
	topic, groupID := name("sa-txn"), name("sa-tg")
	createTopic(admin, topic, txnPartitions, nil)

	config := baseConfig(o)
	idempotent(config)
	config.Producer.Transaction.ID = name("sa-txn-id")
	config.Producer.Transaction.Timeout = 30 * time.Second
	producer, err := sarama.NewSyncProducer(o.brokers, config)
	check(err, "NewSyncProducer (transactional)")
	defer producer.Close()
	transaction := func(prefix string, count int, offset int64) {
		check(producer.BeginTxn(), "BeginTxn "+prefix)
		batch := []*sarama.ProducerMessage{}
		for i := range count {
			batch = append(batch, &sarama.ProducerMessage{Topic: topic, Key: sarama.StringEncoder(strconv.Itoa(i % 7)),
				Value: sarama.StringEncoder(fmt.Sprintf("%s-%d", prefix, i))})
		}
		check(producer.SendMessages(batch), "SendMessages "+prefix)
		if offset >= 0 {
			offsets := []*sarama.PartitionOffsetMetadata{}
			for p := range int32(txnPartitions) {
				offsets = append(offsets, &sarama.PartitionOffsetMetadata{Partition: p, Offset: offset + int64(p)})
			}
			check(producer.AddOffsetsToTxn(map[string][]*sarama.PartitionOffsetMetadata{topic: offsets}, groupID),
				"AddOffsetsToTxn "+prefix)
		}
	}
	transaction("c1", 100, 11)
	check(producer.CommitTxn(), "CommitTxn c1")
	transaction("ab", 100, 900)
	check(producer.AbortTxn(), "AbortTxn ab")
	transaction("c2", 100, -1)
	check(producer.CommitTxn(), "CommitTxn c2")
	transaction("open", 50, -1)

	whileOpen := prefixes(readAll(o, topic, sarama.ReadCommitted, 200, 1500*time.Millisecond))
	uncommitted := readAll(o, topic, sarama.ReadUncommitted, 350, time.Second)
	check(producer.CommitTxn(), "CommitTxn open")
	afterCommit := readAll(o, topic, sarama.ReadCommitted, 250, time.Second)

	response, err := admin.ListConsumerGroupOffsets(groupID, map[string][]int32{topic: {0, 1, 2}})
	check(err, "ListConsumerGroupOffsets")
	offsets := map[string]int64{}
	for p := range int32(txnPartitions) {
		if block := response.GetBlock(topic, p); block != nil {
			offsets[strconv.Itoa(int(p))] = block.Offset
		}
	}
	return map[string]any{
		"read_committed_while_open": whileOpen,
		"read_uncommitted":          prefixes(uncommitted),
		"read_committed":            prefixes(afterCommit),
		"committed_in_order":        inTransactionOrder(afterCommit),
		"ordered":                   orderedOffsets(afterCommit) && orderedOffsets(uncommitted),
		"group_offsets":             offsets,
	}
}

// prefixes counts the messages of each transaction (the value's prefix).
func prefixes(got map[int32][]*sarama.ConsumerMessage) map[string]int {
	counts := map[string]int{}
	for _, messages := range got {
		for _, message := range messages {
			counts[strings.SplitN(string(message.Value), "-", 2)[0]]++
		}
	}
	return counts
}

// inTransactionOrder: on every partition, c1's messages, then c2's, then open's.
func inTransactionOrder(got map[int32][]*sarama.ConsumerMessage) bool {
	rank := map[string]int{"c1": 0, "c2": 1, "open": 2}
	for _, messages := range got {
		last := 0
		for _, message := range messages {
			r, known := rank[strings.SplitN(string(message.Value), "-", 2)[0]]
			if !known || r < last {
				return false
			}
			last = r
		}
	}
	return true
}
