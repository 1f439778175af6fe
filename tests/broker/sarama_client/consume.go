package main

import (
	"errors"
	"strconv"
	"time"

	"github.com/IBM/sarama"
)

// runConsume: a plain Consumer's partition consumers from OffsetOldest, OffsetNewest and a given offset,
// an offset past the end, and the client's offset lookups (oldest, newest, by timestamp).
func runConsume(o options) map[string]any {
	admin := newAdmin(o)
	defer admin.Close()
	topic := name("sa-consume")
	createTopic(admin, topic, 2, nil)

	config := baseConfig(o)
	config.Producer.Partitioner = sarama.NewManualPartitioner
	config.Producer.RequiredAcks = sarama.WaitForAll
	client, err := sarama.NewClient(o.brokers, config)
	check(err, "NewClient")
	defer client.Close()
	producer, err := sarama.NewSyncProducerFromClient(client)
	check(err, "NewSyncProducer")
	defer producer.Close()
	base := time.Now().Add(-time.Hour).Truncate(time.Second)
	send := func(from, to int) {
		batch := []*sarama.ProducerMessage{}
		for i := from; i < to; i++ {
			batch = append(batch, &sarama.ProducerMessage{Topic: topic, Partition: 0,
				Value: sarama.StringEncoder("m-" + strconv.Itoa(i)), Timestamp: base.Add(time.Duration(i) * time.Second)})
		}
		check(producer.SendMessages(batch), "SendMessages")
	}
	send(0, 100)

	consumer, err := sarama.NewConsumerFromClient(client)
	check(err, "NewConsumer")
	defer consumer.Close()
	oldest, err := consumer.ConsumePartition(topic, 0, sarama.OffsetOldest)
	check(err, "ConsumePartition OffsetOldest")
	defer oldest.Close()
	// one Consumer consumes a partition once: the second reader of partition 0 is a consumer of its own
	second, err := sarama.NewConsumerFromClient(client)
	check(err, "NewConsumer")
	defer second.Close()
	newest, err := second.ConsumePartition(topic, 0, sarama.OffsetNewest)
	check(err, "ConsumePartition OffsetNewest")
	defer newest.Close()
	empty, err := consumer.ConsumePartition(topic, 1, sarama.OffsetNewest)
	check(err, "ConsumePartition OffsetNewest of an empty partition")
	defer empty.Close()
	send(100, 150)

	fromOldest := take(oldest, 150)
	fromNewest := take(newest, 50)
	if fromOldest[0] != 0 || fromNewest[0] != 100 {
		fail("first offsets: from oldest %d, from newest %d", fromOldest[0], fromNewest[0])
	}
	for i, offset := range fromOldest {
		if offset != int64(i) {
			fail("from oldest: offset %d at position %d", offset, i)
		}
	}
	oldest.Close()
	given, err := consumer.ConsumePartition(topic, 0, 42)
	check(err, "ConsumePartition at 42")
	firstGiven := take(given, 1)[0]
	given.Close()
	_, pastEnd := consumer.ConsumePartition(topic, 0, 1000)
	if !errors.Is(pastEnd, sarama.ErrOffsetOutOfRange) {
		fail("ConsumePartition past the end: %v, want %v", pastEnd, sarama.ErrOffsetOutOfRange)
	}

	lookup := func(at int64) int64 {
		offset, err := client.GetOffset(topic, 0, at)
		check(err, "GetOffset "+strconv.FormatInt(at, 10))
		return offset
	}
	emptyNewest, err := client.GetOffset(topic, 1, sarama.OffsetNewest)
	check(err, "GetOffset of an empty partition")
	return map[string]any{
		"from_oldest":       len(fromOldest),
		"from_newest":       len(fromNewest),
		"first_from_newest": fromNewest[0],
		"high_water_mark":   newest.HighWaterMarkOffset(),
		"first_from_42":     firstGiven,
		"past_end":          kerr(pastEnd),
		"oldest_offset":     lookup(sarama.OffsetOldest),
		"newest_offset":     lookup(sarama.OffsetNewest),
		"offset_at_time_30": lookup(base.Add(30 * time.Second).UnixMilli()),
		"offset_after_last": lookup(base.Add(time.Hour + time.Minute).UnixMilli()),
		"empty_newest":      emptyNewest,
	}
}

// take: the offsets of the next `count` messages of a partition consumer.
func take(pc sarama.PartitionConsumer, count int) []int64 {
	offsets := []int64{}
	for len(offsets) < count {
		select {
		case message := <-pc.Messages():
			offsets = append(offsets, message.Offset)
		case e := <-pc.Errors():
			fail("partition consumer: %v", e)
		case <-time.After(15 * time.Second):
			fail("partition consumer: %d messages of %d", len(offsets), count)
		}
	}
	return offsets
}
