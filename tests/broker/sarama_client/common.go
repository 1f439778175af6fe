package main

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/IBM/sarama"
)

func name(prefix string) string {
	return fmt.Sprintf("%s-%08x", prefix, rand.Uint32())
}

func baseConfig(o options) *sarama.Config {
	config := sarama.NewConfig()
	config.Version = o.version
	config.ClientID = "lakefeed-sarama-test"
	config.Metadata.Retry.Backoff = 100 * time.Millisecond
	config.Producer.Return.Successes = true
	config.Consumer.Return.Errors = true
	return config
}

// idempotent: what Sarama requires of an idempotent (and a transactional) producer.
func idempotent(config *sarama.Config) {
	config.Producer.Idempotent = true
	config.Producer.RequiredAcks = sarama.WaitForAll
	config.Net.MaxOpenRequests = 1
	config.Producer.Retry.Max = 10
	config.Producer.Retry.Backoff = 100 * time.Millisecond
}

func newAdmin(o options) sarama.ClusterAdmin {
	admin, err := sarama.NewClusterAdmin(o.brokers, baseConfig(o))
	check(err, "NewClusterAdmin")
	return admin
}

func createTopic(admin sarama.ClusterAdmin, topic string, partitions int32, configs map[string]*string) {
	check(admin.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: partitions, ReplicationFactor: 1,
		ConfigEntries: configs}, false), "CreateTopic "+topic)
}

// readAll reads every partition of topic from OffsetOldest until at least `want` messages arrived and then
// `quiet` passed without another (so extra messages show), or until the deadline.
func readAll(o options, topic string, isolation sarama.IsolationLevel, want int,
	quiet time.Duration) map[int32][]*sarama.ConsumerMessage {
	config := baseConfig(o)
	config.Consumer.IsolationLevel = isolation
	consumer, err := sarama.NewConsumer(o.brokers, config)
	check(err, "NewConsumer")
	defer consumer.Close()
	partitions, err := consumer.Partitions(topic)
	check(err, "Partitions")
	messages := make(chan *sarama.ConsumerMessage, 1024)
	errs := make(chan *sarama.ConsumerError, 16)
	for _, partition := range partitions {
		pc, err := consumer.ConsumePartition(topic, partition, sarama.OffsetOldest)
		check(err, fmt.Sprintf("ConsumePartition %s/%d", topic, partition))
		defer pc.Close()
		go func() {
			for message := range pc.Messages() {
				messages <- message
			}
		}()
		go func() {
			for e := range pc.Errors() {
				errs <- e
			}
		}()
	}
	got := map[int32][]*sarama.ConsumerMessage{}
	count := 0
	for {
		wait := time.Until(o.deadline) - 5*time.Second
		if count >= want {
			wait = min(wait, quiet)
		}
		select {
		case message := <-messages:
			got[message.Partition] = append(got[message.Partition], message)
			count++
		case e := <-errs:
			fail("consuming %s (%v): %v", topic, isolation, e)
		case <-time.After(wait):
			if count < want {
				fail("read %d of %d messages of %s (isolation %v)", count, want, topic, isolation)
			}
			return got
		}
	}
}

// orderedOffsets: each partition's messages came in strictly increasing offsets.
func orderedOffsets(got map[int32][]*sarama.ConsumerMessage) bool {
	for _, messages := range got {
		for i := 1; i < len(messages); i++ {
			if messages[i].Offset <= messages[i-1].Offset {
				return false
			}
		}
	}
	return true
}

// kerr names an error by its Kafka error code alone (brokers word their messages differently).
func kerr(err error) string {
	var code sarama.KError
	switch {
	case err == nil:
		return "none"
	case errors.As(err, &code):
		return code.Error()
	default:
		return err.Error()
	}
}
