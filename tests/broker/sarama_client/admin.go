package main

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/IBM/sarama"
)

// runAdmin: ClusterAdmin's topic and config calls as a Sarama user makes them.
func runAdmin(o options) map[string]any {
	admin := newAdmin(o)
	defer admin.Close()
	topic := name("sa-admin")
	retention := "3600000"
	createTopic(admin, topic, 6, map[string]*string{"retention.ms": &retention})
	again := admin.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: 6, ReplicationFactor: 1}, false)
	if !errors.Is(again, sarama.ErrTopicAlreadyExists) {
		fail("CreateTopic of an existing topic: %v, want %v", again, sarama.ErrTopicAlreadyExists)
	}
	validated := admin.CreateTopic(name("sa-validate"), &sarama.TopicDetail{NumPartitions: 2, ReplicationFactor: 1}, true)
	check(validated, "CreateTopic validateOnly")

	// Kafka answers CreateTopics once its controller committed the topic; the broker lists it once its
	// metadata log reaches it, a moment later (CI saw one ListTopics without it)
	var detail sarama.TopicDetail
	found := false
	for end := time.Now().Add(10 * time.Second); !found && time.Now().Before(end); {
		listed, err := admin.ListTopics()
		check(err, "ListTopics")
		if detail, found = listed[topic]; !found {
			time.Sleep(100 * time.Millisecond)
		}
	}
	if !found {
		fail("ListTopics has no %s after 10 s", topic)
	}
	listedRetention := ""
	if value := detail.ConfigEntries["retention.ms"]; value != nil {
		listedRetention = *value
	}

	described := describePartitions(admin, topic)
	brokers, controller, err := admin.DescribeCluster()
	check(err, "DescribeCluster")
	if len(brokers) == 0 {
		fail("DescribeCluster: no brokers")
	}

	entries, err := admin.DescribeConfig(sarama.ConfigResource{Type: sarama.TopicResource, Name: topic})
	check(err, "DescribeConfig topic")
	sources := map[string]string{}
	values := map[string]string{}
	types := map[string]int{} // every config a topic has, and its type
	for _, entry := range entries {
		types[entry.Name] = int(entry.Type)
		if entry.Name == "retention.ms" || entry.Name == "cleanup.policy" {
			sources[entry.Name] = entry.Source.String()
			values[entry.Name] = entry.Value
		}
	}
	brokerEntries, err := admin.DescribeConfig(sarama.ConfigResource{Type: sarama.BrokerResource,
		Name: strconv.Itoa(int(brokers[0].ID()))})
	check(err, "DescribeConfig broker")

	longer := "7200000"
	check(admin.IncrementalAlterConfig(sarama.TopicResource, topic, map[string]sarama.IncrementalAlterConfigsEntry{
		"retention.ms": {Operation: sarama.IncrementalAlterConfigsOperationSet, Value: &longer}}, false),
		"IncrementalAlterConfig")
	// Kafka applies an altered config when its metadata log reaches the broker: a moment later
	var altered []sarama.ConfigEntry
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		altered, err = admin.DescribeConfig(sarama.ConfigResource{Type: sarama.TopicResource, Name: topic,
			ConfigNames: []string{"retention.ms"}})
		check(err, "DescribeConfig after IncrementalAlterConfig")
		if configValues(altered)["retention.ms"] == longer {
			break
		}
	}

	check(admin.CreatePartitions(topic, 8, nil, false), "CreatePartitions 8")
	// Kafka lists new partitions once its metadata log reaches the broker (as for configs above)
	var grown []int32
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if grown = describePartitions(admin, topic); len(grown) == 8 {
			break
		}
	}
	fewer := admin.CreatePartitions(topic, 4, nil, false)

	deleted := deleteRecords(o, admin, topic)
	reassigning, err := admin.ListPartitionReassignments(topic, []int32{0, 1})
	reassignments := kerr(err) + fmt.Sprintf(", %d topics", len(reassigning))

	check(admin.DeleteTopic(topic), "DeleteTopic")
	gone := ""
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		metadata, err := admin.DescribeTopics([]string{topic})
		check(err, "DescribeTopics after DeleteTopic")
		if metadata[0].Err != sarama.ErrNoError {
			gone = metadata[0].Err.Error()
			break
		}
	}
	return map[string]any{
		"create_again":          kerr(again),
		"listed_partitions":     detail.NumPartitions,
		"listed_retention_ms":   listedRetention,
		"described_partitions":  described,
		"controller_known":      controller >= 0,
		"config_values":         values,
		"config_sources":        sources,
		"config_types":          types,
		"broker_config_entries": len(brokerEntries) > 0,
		"altered":               configValues(altered),
		"grown_partitions":      grown,
		"create_fewer":          kerr(fewer),
		"reassignments":         reassignments,
		"delete_records":        deleted,
		"after_delete_topic":    gone,
	}
}

// describePartitions: DescribeTopics' partition ids, checked to have a leader and no error.
func describePartitions(admin sarama.ClusterAdmin, topic string) []int32 {
	metadata, err := admin.DescribeTopics([]string{topic})
	check(err, "DescribeTopics")
	if len(metadata) != 1 || metadata[0].Err != sarama.ErrNoError {
		fail("DescribeTopics %s: %+v", topic, metadata)
	}
	ids := []int32{}
	for _, partition := range metadata[0].Partitions {
		if partition.Err != sarama.ErrNoError || partition.Leader < 0 || len(partition.Isr) == 0 {
			fail("DescribeTopics %s partition %d: %+v", topic, partition.ID, partition)
		}
		ids = append(ids, partition.ID)
	}
	slices.Sort(ids)
	return ids
}

func configValues(entries []sarama.ConfigEntry) map[string]string {
	values := map[string]string{}
	for _, entry := range entries {
		values[entry.Name] = entry.Value
	}
	return values
}

// deleteRecords produces 20 messages to partition 0, deletes those before offset 10 and reports the
// partition's oldest offset and the first offset a consumer from OffsetOldest gets.
func deleteRecords(o options, admin sarama.ClusterAdmin, topic string) map[string]int64 {
	config := baseConfig(o)
	config.Producer.Partitioner = sarama.NewManualPartitioner
	client, err := sarama.NewClient(o.brokers, config)
	check(err, "NewClient")
	defer client.Close()
	producer, err := sarama.NewSyncProducerFromClient(client)
	check(err, "NewSyncProducer")
	defer producer.Close()
	messages := []*sarama.ProducerMessage{}
	for i := range 20 {
		messages = append(messages, &sarama.ProducerMessage{Topic: topic, Partition: 0,
			Value: sarama.StringEncoder(strconv.Itoa(i))})
	}
	check(producer.SendMessages(messages), "SendMessages")
	check(admin.DeleteRecords(topic, map[int32]int64{0: 10}), "DeleteRecords")
	oldest, err := client.GetOffset(topic, 0, sarama.OffsetOldest)
	check(err, "GetOffset oldest")
	newest, err := client.GetOffset(topic, 0, sarama.OffsetNewest)
	check(err, "GetOffset newest")
	consumer, err := sarama.NewConsumerFromClient(client)
	check(err, "NewConsumer")
	defer consumer.Close()
	pc, err := consumer.ConsumePartition(topic, 0, sarama.OffsetOldest)
	check(err, "ConsumePartition after DeleteRecords")
	defer pc.Close()
	var first int64 = -1
	select {
	case message := <-pc.Messages():
		first = message.Offset
	case e := <-pc.Errors():
		fail("consuming after DeleteRecords: %v", e)
	case <-time.After(10 * time.Second):
		fail("no message after DeleteRecords")
	}
	return map[string]int64{"oldest": oldest, "newest": newest, "first_consumed": first}
}
