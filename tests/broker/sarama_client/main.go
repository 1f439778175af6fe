// sarama_client runs what a Sarama (github.com/IBM/sarama) user does against a Kafka-compatible broker, for
// tests/broker/test_sarama.py, and what a segmentio/kafka-go user does, for tests/broker/test_kafka_go.py: the
// same program against our broker and Apache Kafka 4.3.
//
// Usage: sarama_client -brokers HOST:PORT -scenario NAME [-version 4.3.0|default] [-timeout 60s]
//
// Each scenario creates its own topics and groups (random names), checks what it can check alone (a
// failure exits 1 with a message on stderr) and prints one JSON line of what it observed for the test to
// compare between the two brokers. Sarama's scenarios: admin, produce, consume, group, txn, eos; kafka-go's
// (-version does not apply): kafka-go-admin, kafka-go-produce, kafka-go-group.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"strings"
	"time"

	"github.com/IBM/sarama"
)

type options struct {
	brokers  []string
	version  sarama.KafkaVersion
	deadline time.Time
}

var scenarios = map[string]func(options) map[string]any{
	"admin":            runAdmin,
	"produce":          runProduce,
	"consume":          runConsume,
	"group":            runGroup,
	"txn":              runTxn,
	"eos":              runEOS,
	"kafka-go-admin":   runKgoAdmin,
	"kafka-go-produce": runKgoProduce,
	"kafka-go-group":   runKgoGroup,
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "sarama_client: FAILED: "+format+"\n", args...)
	os.Exit(1)
}

func check(err error, what string) {
	if err != nil {
		fail("%s: %v", what, err)
	}
}

func main() {
	brokers := flag.String("brokers", "", "bootstrap address")
	scenario := flag.String("scenario", "", "a scenario name (see above)")
	version := flag.String("version", "default", "the Kafka version Sarama speaks: a version such as 4.3.0, or default")
	timeout := flag.Duration("timeout", 60*time.Second, "give up after")
	verbose := flag.Bool("verbose", false, "Sarama's log on stderr")
	flag.Parse()
	run, known := scenarios[*scenario]
	if *brokers == "" || !known {
		fail("usage: -brokers HOST:PORT -scenario admin|produce|consume|group|txn|eos|kafka-go-admin|" +
			"kafka-go-produce|kafka-go-group")
	}
	if *verbose {
		sarama.Logger = log.New(os.Stderr, "[sarama] ", log.LstdFlags|log.Lmicroseconds)
	}
	parsed := sarama.DefaultVersion
	if *version != "default" {
		var err error
		parsed, err = sarama.ParseKafkaVersion(*version)
		check(err, "-version")
	}
	started := time.Now()
	timer := time.AfterFunc(*timeout, func() { fail("%s: no result after %s", *scenario, *timeout) })
	defer timer.Stop()
	result := run(options{brokers: []string{*brokers}, version: parsed, deadline: started.Add(*timeout)})
	result["scenario"] = *scenario
	if !strings.HasPrefix(*scenario, "kafka-go-") {
		result["version"] = parsed.String()
	}
	result["elapsed_ms"] = time.Since(started).Milliseconds()
	line, err := json.Marshal(result)
	check(err, "json")
	fmt.Println(string(line))
}
