package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/IBM/sarama"
)

const producePartitions = 4

type sent struct {
	partition int32
	offset    int64
	key       string
	codec     string
}

// runProduce: an idempotent AsyncProducer per compression codec (keys, headers, acks=all, one request in
// flight) and a SyncProducer send to one topic; a consumer from OffsetOldest must then find every message
// at the partition and offset its producer reported, with its key and headers, in the order sent.
func runProduce(o options) map[string]any {
	admin := newAdmin(o)
	defer admin.Close()
	topic := name("sa-produce")
	createTopic(admin, topic, producePartitions, nil)

	reported := map[string]sent{} // value -> where its producer says it is
	codecs := []sarama.CompressionCodec{sarama.CompressionNone, sarama.CompressionGZIP, sarama.CompressionSnappy,
		sarama.CompressionLZ4, sarama.CompressionZSTD}
	perCodec := 600
	for _, codec := range codecs {
		produceAsync(o, topic, codec, perCodec, reported)
	}
	syncSent := produceSync(o, topic, 300, reported)

	got := readAll(o, topic, sarama.ReadUncommitted, len(reported), time.Second)
	consumed, mismatches, headerless := 0, 0, 0
	partitionCounts := map[string]int{}
	keyPartitions := map[string]int32{}
	splitKeys := 0
	for partition, messages := range got {
		partitionCounts[strconv.Itoa(int(partition))] = len(messages)
		lastSeq := map[string]int{}
		for _, message := range messages {
			consumed++
			value := string(message.Value)
			where, known := reported[value]
			if !known || where.partition != partition || where.offset != message.Offset ||
				where.key != string(message.Key) {
				mismatches++
				continue
			}
			headers := map[string]string{}
			for _, header := range message.Headers {
				headers[string(header.Key)] = string(header.Value)
			}
			seq, _ := strconv.Atoi(headers["seq"])
			if headers["codec"] != where.codec || !strings.HasSuffix(value, "-"+headers["seq"]) {
				headerless++
			}
			// per partition, each producer's messages are in the order it sent them
			if last, seen := lastSeq[where.codec]; seen && seq <= last {
				mismatches++
			}
			lastSeq[where.codec] = seq
			if previous, seen := keyPartitions[where.key]; seen && previous != partition {
				splitKeys++
			}
			keyPartitions[where.key] = partition
		}
	}
	return map[string]any{
		"produced":          len(reported),
		"sync_produced":     syncSent,
		"consumed":          consumed,
		"mismatches":        mismatches,
		"header_mismatches": headerless,
		"keys_split":        splitKeys,
		"partition_counts":  partitionCounts,
		"ordered":           orderedOffsets(got),
	}
}

func produceAsync(o options, topic string, codec sarama.CompressionCodec, count int, reported map[string]sent) {
	config := baseConfig(o)
	idempotent(config)
	config.Producer.Compression = codec
	config.Producer.Flush.Messages = 50
	config.Producer.Flush.Frequency = 5 * time.Millisecond
	producer, err := sarama.NewAsyncProducer(o.brokers, config)
	check(err, "NewAsyncProducer "+codec.String())
	go func() {
		for i := range count {
			producer.Input() <- &sarama.ProducerMessage{Topic: topic,
				Key:   sarama.StringEncoder(fmt.Sprintf("key-%d", i%17)),
				Value: sarama.StringEncoder(fmt.Sprintf("%s-%d", codec, i)),
				Headers: []sarama.RecordHeader{{Key: []byte("codec"), Value: []byte(codec.String())},
					{Key: []byte("seq"), Value: []byte(strconv.Itoa(i))}},
			}
		}
	}()
	for range count {
		select {
		case success := <-producer.Successes():
			key, _ := success.Key.Encode()
			value, _ := success.Value.Encode()
			reported[string(value)] = sent{success.Partition, success.Offset, string(key), codec.String()}
		case e := <-producer.Errors():
			fail("AsyncProducer %s: %v", codec, e)
		case <-time.After(time.Until(deadlineOf(o))):
			fail("AsyncProducer %s: %d successes of %d", codec, len(reported), count)
		}
	}
	check(producer.Close(), "AsyncProducer Close")
}

// produceSync sends half its messages in one SendMessages call and the rest one SendMessage at a time.
func produceSync(o options, topic string, count int, reported map[string]sent) int {
	config := baseConfig(o)
	config.Producer.RequiredAcks = sarama.WaitForAll
	producer, err := sarama.NewSyncProducer(o.brokers, config)
	check(err, "NewSyncProducer")
	defer producer.Close()
	message := func(i int) *sarama.ProducerMessage {
		return &sarama.ProducerMessage{Topic: topic, Key: sarama.StringEncoder(fmt.Sprintf("key-%d", i%17)),
			Value: sarama.StringEncoder(fmt.Sprintf("sync-%d", i)),
			Headers: []sarama.RecordHeader{{Key: []byte("codec"), Value: []byte("sync")},
				{Key: []byte("seq"), Value: []byte(strconv.Itoa(i))}}}
	}
	batch := []*sarama.ProducerMessage{}
	for i := range count / 2 {
		batch = append(batch, message(i))
	}
	check(producer.SendMessages(batch), "SendMessages")
	for i := count / 2; i < count; i++ {
		one := message(i)
		_, _, err := producer.SendMessage(one)
		check(err, "SendMessage")
		batch = append(batch, one)
	}
	for i, m := range batch {
		reported[fmt.Sprintf("sync-%d", i)] = sent{m.Partition, m.Offset, fmt.Sprintf("key-%d", i%17), "sync"}
	}
	return len(batch)
}

func deadlineOf(o options) time.Time { return o.deadline.Add(-5 * time.Second) }
