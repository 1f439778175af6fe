// Kafka Streams word count with processing.guarantee=exactly_once_v2, run by tests against our broker and
// against Apache Kafka (lakefeed_testing/kafka_streams). Lines of the input topic are split into words,
// counted per word in a KTable (RocksDB store, changelog topic) and every new count is written to the output
// topic as (word, count as a decimal string). The record cache is off, so each occurrence of a word emits
// the next count: under exactly-once the committed output holds 1, 2, ..., n for each word, whatever crashed.
//
// usage: WordCount <bootstrap> <application.id> <input topic> <output topic> <state dir>
// Runs until killed (or SIGTERM: a clean close). Prints "STATE <new state>" lines on stdout; exits 1 on ERROR.

import java.time.Duration;
import java.util.Arrays;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler;

public final class WordCount {
    public static void main(String[] args) throws InterruptedException {
        if (args.length != 5) {
            System.err.println("usage: WordCount <bootstrap> <application.id> <input> <output> <state dir>");
            System.exit(2);
        }
        Properties props = new Properties();
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, args[1]);
        props.put(StreamsConfig.STATE_DIR_CONFIG, args[4]);
        props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
        // 1 s: a transaction stays open long enough for the test to kill the app inside one
        props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 1000);
        props.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
        props.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, 1);
        props.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, 1);
        props.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        props.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        // a killed instance's member leaves the group after this, so the restarted one gets its tasks soon
        props.put(StreamsConfig.consumerPrefix(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG), 6000);
        props.put(StreamsConfig.consumerPrefix(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG), 1000);
        // a killed instance's open transaction is aborted by the coordinator after this
        props.put(StreamsConfig.producerPrefix(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG), 5000);

        StreamsBuilder builder = new StreamsBuilder();
        builder.stream(args[2], Consumed.with(Serdes.String(), Serdes.String()))
            .flatMapValues(line -> Arrays.asList(line.toLowerCase().split("\\W+")))
            .filter((key, word) -> !word.isEmpty())
            .groupBy((key, word) -> word, Grouped.with("words", Serdes.String(), Serdes.String()))
            .count(Materialized.as("counts"))
            .toStream()
            .mapValues(count -> Long.toString(count))
            .to(args[3], Produced.with(Serdes.String(), Serdes.String()));

        KafkaStreams streams = new KafkaStreams(builder.build(), props);
        CountDownLatch closed = new CountDownLatch(1);
        streams.setStateListener((now, before) -> {
            System.out.println("STATE " + now);
            System.out.flush();
            if (now == KafkaStreams.State.ERROR) {
                Runtime.getRuntime().halt(1);
            }
        });
        streams.setUncaughtExceptionHandler(exception -> {
            System.out.println("EXCEPTION " + exception);
            exception.printStackTrace(System.out);
            System.out.flush();
            return StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            streams.close(Duration.ofSeconds(10));
            closed.countDown();
        }));
        streams.start();
        closed.await();
    }
}
