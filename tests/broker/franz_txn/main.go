// franz_txn runs franz-go's exactly-once transactions against a Kafka-compatible broker, for
// tests/broker/test_franz_go_transactions.py (the same program against our broker and Apache Kafka).
//
// Mode "session" (the default) is consume-transform-produce with kgo.GroupTransactSession: it consumes
// -input in the group -group (read_committed), produces one record to -output for every input record
// (same key, value "out:" + the input value, headers naming the input partition and offset) and ends
// the transaction every batch: End(kgo.TryCommit), or with -abort-every-other End(kgo.TryAbort) for
// every second batch, whose output must never be visible and whose input offsets must be consumed again.
//
// Mode "client" is a plain kgo.Client with a transactional id: BeginTransaction, produce a batch of
// "rec-N" values to -output, EndTransaction(TryCommit); with -abort-every-other every second batch
// produces "aborted-N" values and ends with TryAbort.
//
// It exits 0 once -expected input records (or "rec-N" values) are committed, printing one JSON line
// with what it did; on any error, a duplicate or the -timeout it exits 1 with a message on stderr.
// With -crash-after N the session mode exits 3 (after printing its JSON line) in the middle of its
// N+1st transaction: records produced, the transaction open, the group not left, as a killed process.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

type config struct {
	brokers, input, output, group, txnID, mode, logLevel, crashAt string
	expected, batch, crashAfter                                   int
	timeout, sessionTimeout, txnTimeout                           time.Duration
	abortEveryOther                                               bool
}

type summary struct {
	Mode              string `json:"mode"`
	Committed         int    `json:"committed"`
	Batches           int    `json:"batches"`
	CommittedBatches  int    `json:"committed_batches"`
	AbortedBatches    int    `json:"aborted_batches"`
	AbortedRecords    int    `json:"aborted_records"`
	CommitsNotTaken   int    `json:"commits_not_taken"`  // End(TryCommit) that aborted (e.g. a rebalance)
	AbortedDistinct   int    `json:"aborted_distinct"`   // input records in at least one aborted transaction
	ReconsumedAborted int    `json:"reconsumed_aborted"` // ... of which consumed again and committed
	ElapsedMillis     int64  `json:"elapsed_ms"`
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "franz_txn: FAILED: "+format+"\n", args...)
	os.Exit(1)
}

func main() {
	var c config
	flag.StringVar(&c.brokers, "brokers", "127.0.0.1:9092", "comma-separated seed brokers")
	flag.StringVar(&c.input, "input", "", "input topic (session mode)")
	flag.StringVar(&c.output, "output", "", "output topic")
	flag.StringVar(&c.group, "group", "", "consumer group (session mode)")
	flag.StringVar(&c.txnID, "txn-id", "", "transactional id")
	flag.StringVar(&c.mode, "mode", "session", "session (GroupTransactSession) or client (kgo.Client transactions)")
	flag.IntVar(&c.expected, "expected", 0, "records to commit before exiting 0")
	flag.IntVar(&c.batch, "batch", 100, "records per transaction at most")
	flag.DurationVar(&c.timeout, "timeout", 120*time.Second, "give up (exit 1) after this long")
	flag.BoolVar(&c.abortEveryOther, "abort-every-other", false, "abort every second transaction")
	flag.IntVar(&c.crashAfter, "crash-after", 0, "session mode: after this many committed transactions begin one more "+
		"and exit 3 in its middle (see -crash-at), without ending it or leaving the group (0: never)")
	flag.StringVar(&c.crashAt, "crash-at", "produced", "where -crash-after exits: produced (records flushed) or "+
		"offsets (TxnOffsetCommit answered: the group's offsets pending in the transaction)")
	flag.DurationVar(&c.txnTimeout, "txn-timeout", 30*time.Second, "the transaction timeout")
	flag.DurationVar(&c.sessionTimeout, "session-timeout", 10*time.Second, "the group member's session timeout")
	flag.StringVar(&c.logLevel, "log-level", "info", "franz-go log level on stderr: none, error, warn, info, debug")
	flag.Parse()
	if c.output == "" || c.txnID == "" || c.expected <= 0 || c.batch <= 0 {
		fail("-output, -txn-id, -expected > 0 and -batch > 0 are required")
	}
	if c.crashAt != "produced" && c.crashAt != "offsets" {
		fail("-crash-at is produced or offsets, not %q", c.crashAt)
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	started := time.Now()
	var s summary
	var err error
	switch c.mode {
	case "session":
		if c.input == "" || c.group == "" {
			fail("session mode needs -input and -group")
		}
		s, err = runSession(ctx, c)
	case "client":
		s, err = runClient(ctx, c)
	default:
		fail("unknown -mode %q", c.mode)
	}
	s.Mode = c.mode
	s.ElapsedMillis = time.Since(started).Milliseconds()
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil {
			fail("timeout after %s: committed %d of %d (%+v): %v", c.timeout, s.Committed, c.expected, s, err)
		}
		fail("%v (committed %d of %d; %+v)", err, s.Committed, c.expected, s)
	}
	line, _ := json.Marshal(s)
	fmt.Println(string(line))
}

func logger(c config) kgo.Opt {
	var level kgo.LogLevel
	switch strings.ToLower(c.logLevel) {
	case "none":
		level = kgo.LogLevelNone
	case "error":
		level = kgo.LogLevelError
	case "warn":
		level = kgo.LogLevelWarn
	case "debug":
		level = kgo.LogLevelDebug
	default:
		level = kgo.LogLevelInfo
	}
	return kgo.WithLogger(kgo.BasicLogger(os.Stderr, level, func() string {
		return time.Now().Format("15:04:05.000 ")
	}))
}

func commonOpts(c config) []kgo.Opt {
	return []kgo.Opt{
		kgo.SeedBrokers(strings.Split(c.brokers, ",")...),
		kgo.TransactionalID(c.txnID),
		kgo.TransactionTimeout(c.txnTimeout),
		kgo.DefaultProduceTopic(c.output),
		logger(c),
	}
}

// crashHook exits 3 (as a killed process) once the TxnOffsetCommit of the crash transaction is answered.
type crashHook struct {
	armed   *atomic.Bool
	summary *summary
}

func (h crashHook) OnBrokerRead(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if key != 28 || err != nil || !h.armed.Load() { // 28: TxnOffsetCommit
		return
	}
	crash(*h.summary, "after its TxnOffsetCommit")
}

func crash(s summary, where string) {
	line, _ := json.Marshal(s)
	fmt.Println(string(line))
	fmt.Fprintf(os.Stderr, "franz_txn: crashing in transaction %d %s\n", s.Batches+1, where)
	os.Exit(3)
}

// producedErrors collects the first error of asynchronous produces.
type producedErrors struct {
	mu    sync.Mutex
	first error
}

func (p *producedErrors) promise(r *kgo.Record, err error) {
	if err == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.first == nil {
		p.first = fmt.Errorf("produce to %s: %w", r.Topic, err)
	}
}

func (p *producedErrors) err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.first
}

func header(r *kgo.Record, key string) string {
	for _, h := range r.Headers {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}

func runSession(ctx context.Context, c config) (summary, error) {
	var s summary
	s.Mode = c.mode
	var crashArmed atomic.Bool
	opts := append(commonOpts(c),
		kgo.WithHooks(crashHook{&crashArmed, &s}),
		kgo.ConsumerGroup(c.group),
		kgo.ConsumeTopics(c.input),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(500*time.Millisecond),
		kgo.SessionTimeout(c.sessionTimeout),
		kgo.HeartbeatInterval(c.sessionTimeout/5),
	)
	sess, err := kgo.NewGroupTransactSession(opts...)
	if err != nil {
		return s, fmt.Errorf("new GroupTransactSession: %w", err)
	}
	defer sess.Close()

	committed := map[string]bool{} // "partition/offset" of input records whose output committed
	aborted := map[string]bool{}   // ... whose output was aborted on purpose
	for len(committed) < c.expected {
		if err := ctx.Err(); err != nil {
			return s, err
		}
		fetches := sess.PollRecords(ctx, c.batch)
		if fetches.IsClientClosed() {
			return s, errors.New("client closed while polling")
		}
		for _, fe := range fetches.Errors() {
			if errors.Is(fe.Err, context.DeadlineExceeded) || errors.Is(fe.Err, context.Canceled) {
				return s, ctx.Err()
			}
			return s, fmt.Errorf("fetch %s[%d]: %w", fe.Topic, fe.Partition, fe.Err)
		}
		records := fetches.Records()
		if len(records) == 0 {
			continue
		}
		if err := sess.Begin(); err != nil {
			return s, fmt.Errorf("begin transaction %d: %w", s.Batches, err)
		}
		abort := c.abortEveryOther && s.Batches%2 == 1
		crashNow := c.crashAfter > 0 && s.CommittedBatches == c.crashAfter
		var produced producedErrors
		for _, r := range records {
			sess.Produce(ctx, &kgo.Record{
				Topic: c.output,
				Key:   r.Key,
				Value: append([]byte("out:"), r.Value...),
				Headers: []kgo.RecordHeader{
					{Key: "in-partition", Value: []byte(strconv.Itoa(int(r.Partition)))},
					{Key: "in-offset", Value: []byte(strconv.FormatInt(r.Offset, 10))},
				},
			}, produced.promise)
		}
		if crashNow && c.crashAt == "offsets" {
			// End(TryCommit) below flushes, sends TxnOffsetCommit and the hook exits: the transaction
			// stays open holding the group's offsets, so another consumer's OffsetFetch (require_stable)
			// answers UNSTABLE_OFFSET_COMMIT until the coordinator aborts it (its timeout).
			crashArmed.Store(true)
		} else if crashNow {
			// An open transaction with records in the output's log: the next instance with this
			// transactional id must abort it (InitProducerId) before it can go on.
			if err := sess.Client().Flush(ctx); err != nil {
				return s, fmt.Errorf("flush before the crash: %w", err)
			}
			crash(s, fmt.Sprintf("with %d records produced", len(records)))
		}
		try := kgo.TryCommit
		if abort {
			// Flush first, so the aborted records are in the output's log (read_uncommitted sees them)
			// rather than dropped from the client's buffer by End(TryAbort).
			if err := sess.Client().Flush(ctx); err != nil {
				return s, fmt.Errorf("flush before abort %d: %w", s.Batches, err)
			}
			try = kgo.TryAbort
		}
		ok, err := sess.End(ctx, try)
		s.Batches++
		if err != nil {
			return s, fmt.Errorf("end transaction %d (commit=%v): %w", s.Batches, !abort, err)
		}
		if err := produced.err(); err != nil && !abort {
			return s, fmt.Errorf("transaction %d: %w", s.Batches, err)
		}
		switch {
		case abort && ok:
			return s, fmt.Errorf("transaction %d: End(TryAbort) reported a commit", s.Batches)
		case abort:
			s.AbortedBatches++
			s.AbortedRecords += len(records)
			for _, r := range records {
				aborted[fmt.Sprintf("%d/%d", r.Partition, r.Offset)] = true
			}
			s.AbortedDistinct = len(aborted)
		case !ok:
			s.CommitsNotTaken++ // the session aborted (rebalance, fenced commit): consumed again from the committed offsets
		default:
			s.CommittedBatches++
			for _, r := range records {
				key := fmt.Sprintf("%d/%d", r.Partition, r.Offset)
				if committed[key] {
					return s, fmt.Errorf("input %s[%s] committed twice (transaction %d)", c.input, key, s.Batches)
				}
				committed[key] = true
				if aborted[key] {
					s.ReconsumedAborted++
				}
			}
			s.Committed = len(committed)
		}
	}
	if c.abortEveryOther && s.ReconsumedAborted != len(aborted) {
		return s, fmt.Errorf("%d input records were in aborted transactions but only %d were consumed and committed again",
			len(aborted), s.ReconsumedAborted)
	}
	return s, nil
}

func runClient(ctx context.Context, c config) (summary, error) {
	var s summary
	cl, err := kgo.NewClient(commonOpts(c)...)
	if err != nil {
		return s, fmt.Errorf("new client: %w", err)
	}
	defer cl.Close()
	next := 0
	for s.Committed < c.expected {
		if err := ctx.Err(); err != nil {
			return s, err
		}
		abort := c.abortEveryOther && s.Batches%2 == 1
		if err := cl.BeginTransaction(); err != nil {
			return s, fmt.Errorf("begin transaction %d: %w", s.Batches, err)
		}
		n := min(c.batch, c.expected-s.Committed)
		prefix := "rec-"
		if abort {
			prefix = "aborted-"
		}
		records := make([]*kgo.Record, n)
		for i := range records {
			v := prefix + strconv.Itoa(next+i)
			records[i] = &kgo.Record{Key: []byte(v), Value: []byte(v)}
		}
		// ProduceSync: every record, aborted ones too, is in the output's log before the transaction ends.
		if err := cl.ProduceSync(ctx, records...).FirstErr(); err != nil {
			return s, fmt.Errorf("transaction %d: produce: %w", s.Batches, err)
		}
		try := kgo.TryCommit
		if abort {
			try = kgo.TryAbort
		}
		err := cl.EndTransaction(ctx, try)
		s.Batches++
		if err != nil {
			return s, fmt.Errorf("end transaction %d (commit=%v): %w", s.Batches, !abort, err)
		}
		if abort {
			s.AbortedBatches++
			s.AbortedRecords += n
		} else {
			s.CommittedBatches++
			s.Committed += n
			next += n
		}
	}
	return s, nil
}
