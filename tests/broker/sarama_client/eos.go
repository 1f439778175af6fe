package main

import (
	"context"
	"sync"
	"time"

	"github.com/IBM/sarama"
)

const eosRecords = 100

// transformer turns every consumed message into one output message, in a transaction of its own that also
// commits the message's offset for the group (AddMessageToTxnWithGroupMetadata: TxnOffsetCommit with the
// session's generation and member id, KIP-447).
type transformer struct {
	producer sarama.SyncProducer
	groupID  string
	output   string
	mu       sync.Mutex
	done     int
	err      error
}

func (t *transformer) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (t *transformer) Cleanup(sarama.ConsumerGroupSession) error { return nil }

func (t *transformer) ConsumeClaim(session sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for message := range claim.Messages() {
		if err := t.transform(session, message); err != nil {
			t.mu.Lock()
			t.err = err
			t.mu.Unlock()
			return err
		}
	}
	return nil
}

func (t *transformer) transform(session sarama.ConsumerGroupSession, message *sarama.ConsumerMessage) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.producer.BeginTxn(); err != nil {
		return err
	}
	_, _, err := t.producer.SendMessage(&sarama.ProducerMessage{Topic: t.output, Key: sarama.ByteEncoder(message.Key),
		Value: sarama.StringEncoder("out:" + string(message.Value))})
	if err != nil {
		return err
	}
	metadata := sarama.NewConsumerGroupMetadataFromSession(session, t.groupID, nil)
	if err := t.producer.AddMessageToTxnWithGroupMetadata(message, metadata, nil); err != nil {
		return err
	}
	if err := t.producer.CommitTxn(); err != nil {
		return err
	}
	t.done++
	return nil
}

func (t *transformer) progress() (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.done, t.err
}

// runEOS: consume-transform-produce as Sarama's exactly-once example does it; read_committed then sees one
// output message per input message and the group's committed offset is the input's end.
func runEOS(o options) map[string]any {
	admin := newAdmin(o)
	defer admin.Close()
	input, output, groupID := name("sa-in"), name("sa-out"), name("sa-eos")
	createTopic(admin, input, 1, nil)
	createTopic(admin, output, 3, nil)
	sendValues(o, input, "in", eosRecords)

	config := baseConfig(o)
	idempotent(config)
	config.Producer.Transaction.ID = name("sa-eos-txn")
	producer, err := sarama.NewSyncProducer(o.brokers, config)
	check(err, "NewSyncProducer (transactional)")
	t := &transformer{producer: producer, groupID: groupID, output: output}
	groupConfig := baseConfig(o)
	groupConfig.Consumer.Offsets.Initial = sarama.OffsetOldest
	groupConfig.Consumer.Offsets.AutoCommit.Enable = false
	groupConfig.Consumer.IsolationLevel = sarama.ReadCommitted
	group, err := sarama.NewConsumerGroup(o.brokers, groupID, groupConfig)
	check(err, "NewConsumerGroup")
	ctx, cancel := context.WithCancel(context.Background())
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		for ctx.Err() == nil {
			if err := group.Consume(ctx, []string{input}, t); err != nil && ctx.Err() == nil {
				fail("Consume: %v", err)
			}
		}
	}()
	waitFor(o, "every input message transformed", func() bool {
		done, err := t.progress()
		check(err, "transaction")
		return done >= eosRecords
	})
	cancel()
	<-finished
	check(group.Close(), "ConsumerGroup Close")
	check(producer.Close(), "producer Close")

	outputs := map[string]int{}
	for _, messages := range readAll(o, output, sarama.ReadCommitted, eosRecords, time.Second) {
		for _, message := range messages {
			outputs[string(message.Value)]++
		}
	}
	response, err := admin.ListConsumerGroupOffsets(groupID, map[string][]int32{input: {0}})
	check(err, "ListConsumerGroupOffsets")
	duplicates := 0
	for _, times := range outputs {
		duplicates += times - 1
	}
	return map[string]any{
		"transactions":      t.done,
		"distinct_outputs":  len(outputs),
		"duplicate_outputs": duplicates,
		"committed_offset":  response.GetBlock(input, 0).Offset,
	}
}
