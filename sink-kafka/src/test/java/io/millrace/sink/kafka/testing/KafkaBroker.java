package io.millrace.sink.kafka.testing;

import kafka.server.KafkaConfig;
import kafka.server.KafkaRaftServer;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.metadata.storage.Formatter;

import java.io.IOException;
import java.io.PrintStream;
import java.io.OutputStream;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.stream.Stream;

/**
 * Test support: a real Kafka broker (KRaft, one node that is broker and controller) in this JVM, on a
 * free loopback port, its storage formatted in a temporary folder that {@link #close()} deletes. Start
 * one per test class: a start takes a few seconds. Shipped in millrace-sink-kafka's test-jar for the
 * engine's, the CLI's and the benchmark's tests.
 *
 * <pre>{@code
 * try (KafkaBroker kafka = KafkaBroker.start()) {
 *     String servers = kafka.bootstrapServers();
 *     List<ConsumerRecord<String, String>> records = kafka.readCommitted("shop.public.orders");
 * }
 * }</pre>
 */
public final class KafkaBroker implements AutoCloseable {
    private final KafkaConfig config;
    private final Path dir;
    private final String bootstrap;
    private KafkaRaftServer server; // null while stopped (test thread only)
    /** The broker's own JVM, for a broker started by {@link #startProcess()}; null while stopped. */
    private Process process;
    private final boolean forked;

    private KafkaBroker(KafkaConfig config, KafkaRaftServer server, Path dir, String bootstrap) {
        this.config = config;
        this.server = server;
        this.dir = dir;
        this.bootstrap = bootstrap;
        this.forked = false;
    }

    private KafkaBroker(KafkaConfig config, Process process, Path dir, String bootstrap) {
        this.config = config;
        this.process = process;
        this.dir = dir;
        this.bootstrap = bootstrap;
        this.forked = true;
    }

    /**
     * A broker in a JVM of its own (this JVM's class path), which {@link #stop()} kills (SIGKILL), as a crash or a
     * lost machine does. An outage test needs it: a broker of this JVM can only shut down gracefully, and a single
     * broker shutting down while it completes a transaction skips the partitions' commit markers ("Couldn't find leader
     * endpoint ... likely deleted already and hence can be skipped"), leaving the transaction hanging for ever
     * (KafkaOutageIT, one run in ten). Killed, it sends them when it is back.
     */
    public static KafkaBroker startProcess() throws Exception {
        KafkaBroker inJvm = start(Map.of());
        inJvm.stop(); // formatted, and its configuration made: the forked broker serves the same storage and ports
        KafkaBroker b = new KafkaBroker(inJvm.config, (Process) null, inJvm.dir, inJvm.bootstrap);
        b.restart();
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            Process p = b.process;
            if (p != null) {
                p.destroyForcibly(); // a test that ended without close(): no broker outlives its JVM
            }
        }));
        return b;
    }

    private Process fork() throws IOException {
        Path props = dir.resolve("server.properties");
        Properties p = new Properties();
        config.originals().forEach((k, v) -> p.put(k, String.valueOf(v)));
        try (OutputStream out = Files.newOutputStream(props)) {
            p.store(out, "millrace test broker");
        }
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        return new ProcessBuilder(java, "-Xmx512m", "-cp", System.getProperty("java.class.path"), "kafka.Kafka", props.toString())
                .redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.appendTo(dir.resolve("broker.log").toFile())).start();
    }

    /** Formats the storage, starts the node and waits until the broker serves. */
    public static KafkaBroker start() throws Exception {
        return start(Map.of());
    }

    /** With further broker settings. */
    public static KafkaBroker start(Map<String, String> settings) throws Exception {
        Path dir = Files.createTempDirectory("millrace-kafka-");
        int port = freePort();
        int controller = freePort();
        Properties p = new Properties();
        p.put("process.roles", "broker,controller");
        p.put("node.id", "1");
        p.put("listeners", "PLAINTEXT://127.0.0.1:" + port + ",CONTROLLER://127.0.0.1:" + controller);
        p.put("advertised.listeners", "PLAINTEXT://127.0.0.1:" + port);
        p.put("controller.listener.names", "CONTROLLER");
        p.put("inter.broker.listener.name", "PLAINTEXT");
        p.put("listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT");
        p.put("controller.quorum.voters", "1@127.0.0.1:" + controller);
        p.put("log.dirs", dir.resolve("data").toString());
        p.put("offsets.topic.replication.factor", "1");
        p.put("offsets.topic.num.partitions", "1");
        p.put("transaction.state.log.replication.factor", "1");
        p.put("transaction.state.log.min.isr", "1");
        p.put("transaction.state.log.num.partitions", "1");
        p.put("group.initial.rebalance.delay.ms", "0");
        p.put("num.partitions", "1");
        p.put("log.flush.interval.messages", Long.toString(Long.MAX_VALUE)); // the page cache is durable enough for tests
        p.putAll(settings);
        KafkaConfig config = new KafkaConfig(p);
        new Formatter().setPrintStream(new PrintStream(OutputStream.nullOutputStream()))
                .setNodeId(1)
                .setClusterId(Uuid.randomUuid().toString())
                .setControllerListenerName("CONTROLLER")
                .setMetadataLogDirectory(config.metadataLogDir())
                .setDirectories(List.of(p.getProperty("log.dirs").split(",")))
                .run();
        KafkaRaftServer server = new KafkaRaftServer(config, Time.SYSTEM);
        String bootstrap = "127.0.0.1:" + port;
        try {
            server.startup();
            awaitReady(bootstrap);
        } catch (Exception e) {
            server.shutdown();
            server.awaitShutdown();
            delete(dir);
            throw e;
        }
        return new KafkaBroker(config, server, dir, bootstrap);
    }

    private static void awaitReady(String bootstrap) throws Exception {
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap))) {
            long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
            while (true) {
                try {
                    if (!admin.describeCluster().nodes().get().isEmpty()) {
                        return;
                    }
                } catch (Exception e) {
                    if (System.nanoTime() > deadline) {
                        throw new IllegalStateException("Kafka broker at " + bootstrap + " not ready after 60 s", e);
                    }
                }
                Thread.sleep(100);
            }
        }
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    /** {@code 127.0.0.1:<port>}. */
    public String bootstrapServers() {
        return bootstrap;
    }

    /** Every committed record of {@code topic}, as a {@code read_committed} consumer sees it, read to the end. */
    public List<ConsumerRecord<String, String>> readCommitted(String topic) {
        return read(topic, "read_committed");
    }

    /** Every record of {@code topic}, committed or not, aborted included ({@code read_uncommitted}). */
    public List<ConsumerRecord<String, String>> readUncommitted(String topic) {
        return read(topic, "read_uncommitted");
    }

    /** How many records with a value (tombstones left out) a {@code read_committed} consumer reads from {@code topic}. */
    public long countCommitted(String topic) {
        long[] n = {0};
        read(topic, "read_committed", r -> {
            if (r.value() != null) {
                n[0]++;
            }
        });
        return n[0];
    }

    /** The topics that exist, internal ones left out. */
    public Set<String> topics() throws Exception {
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap))) {
            return admin.listTopics().names().get();
        }
    }

    private List<ConsumerRecord<String, String>> read(String topic, String isolation) {
        List<ConsumerRecord<String, String>> out = new ArrayList<>();
        read(topic, isolation, out::add);
        return out;
    }

    /** Hands every committed record of {@code topic} to {@code each}, read to the end (nothing is kept: for large topics). */
    public void readCommitted(String topic, java.util.function.Consumer<ConsumerRecord<String, String>> each) {
        read(topic, "read_committed", each);
    }

    private void read(String topic, String isolation, java.util.function.Consumer<ConsumerRecord<String, String>> each) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers());
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation);
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "5000");
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(p)) {
            List<TopicPartition> parts = new ArrayList<>();
            for (PartitionInfo i : c.partitionsFor(topic, Duration.ofSeconds(30))) {
                parts.add(new TopicPartition(topic, i.partition()));
            }
            parts.sort(Comparator.comparingInt(TopicPartition::partition));
            c.assign(parts);
            c.seekToBeginning(parts);
            Map<TopicPartition, Long> end = c.endOffsets(parts, Duration.ofSeconds(30));
            long deadline = System.nanoTime() + Duration.ofSeconds(120).toNanos();
            while (!reached(c, end.entrySet())) {
                if (System.nanoTime() > deadline) {
                    throw new AssertionError("could not read " + topic + " to its end " + end + " in 120 s");
                }
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                    each.accept(r);
                }
            }
        }
    }

    private static boolean reached(KafkaConsumer<?, ?> c, Collection<Map.Entry<TopicPartition, Long>> end) {
        for (Map.Entry<TopicPartition, Long> e : end) {
            if (c.position(e.getKey()) < e.getValue()) {
                return false;
            }
        }
        return true;
    }

    /**
     * Shuts the broker down, keeping its data: clients see it unreachable until {@link #restart()}. A broker of
     * {@link #startProcess()} is killed.
     */
    public void stop() {
        if (process != null) {
            process.destroyForcibly();
            try {
                process.waitFor();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            process = null;
        }
        if (server != null) {
            server.shutdown();
            server.awaitShutdown();
            server = null;
        }
    }

    /** Starts the stopped broker again, on the same port with the same data, and waits until it serves. */
    public void restart() throws Exception {
        if (server != null || process != null) {
            throw new IllegalStateException("the broker at " + bootstrap + " is running");
        }
        if (forked) {
            process = fork();
            try {
                awaitReady(bootstrap);
            } catch (Exception e) {
                stop();
                throw new IllegalStateException(e.getMessage() + "; its log: " + dir.resolve("broker.log"), e);
            }
            return;
        }
        KafkaRaftServer s = new KafkaRaftServer(config, Time.SYSTEM);
        s.startup();
        server = s;
        awaitReady(bootstrap);
    }

    @Override
    public void close() throws Exception {
        stop();
        delete(dir);
    }

    private static void delete(Path dir) throws IOException {
        try (Stream<Path> files = Files.walk(dir)) {
            for (Path f : files.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(f);
            }
        }
    }
}
