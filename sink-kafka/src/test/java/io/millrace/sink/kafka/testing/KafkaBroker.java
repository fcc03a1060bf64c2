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
    /** The clients' way in, for a broker of {@link #startBehindProxy()}; null otherwise. */
    private final TcpProxy proxy;

    private KafkaBroker(KafkaConfig config, KafkaRaftServer server, Path dir, String bootstrap, TcpProxy proxy) {
        this.config = config;
        this.server = server;
        this.dir = dir;
        this.bootstrap = bootstrap;
        this.proxy = proxy;
    }

    /** Formats the storage, starts the node and waits until the broker serves. */
    public static KafkaBroker start() throws Exception {
        return start(Map.of());
    }

    /** With further broker settings. */
    public static KafkaBroker start(Map<String, String> settings) throws Exception {
        return start(settings, null);
    }

    /**
     * A broker its clients reach through a TCP proxy, which {@link #cutOff()} closes: for an outage. A broker stopped
     * for one ({@link #stop()}) is not what an outage test wants: a single broker stopped while it completes a
     * transaction (also when killed) may skip the partitions' commit markers ("Couldn't find leader endpoint ... likely
     * deleted already and hence can be skipped" in its log) and keep that transaction open for ever, so that
     * {@code read_committed} readers stop at it (KafkaOutageIT, one run in ten). Cut off, it goes on completing them.
     */
    public static KafkaBroker startBehindProxy() throws Exception {
        return start(Map.of(), new TcpProxy(freePort(), 0));
    }

    /** Drops every client connection and refuses new ones, as brokers that went away, until {@link #reconnect()}. */
    public void cutOff() throws IOException {
        proxyOnly().cut();
    }

    /** Lets clients in again after {@link #cutOff()}, and waits until the broker serves them. */
    public void reconnect() throws Exception {
        proxyOnly().restore();
        awaitReady(bootstrap);
    }

    private TcpProxy proxyOnly() {
        if (proxy == null) {
            throw new IllegalStateException("the broker at " + bootstrap + " was not started behind a proxy (startBehindProxy)");
        }
        return proxy;
    }

    private static KafkaBroker start(Map<String, String> settings, TcpProxy via) throws Exception {
        Path dir = Files.createTempDirectory("millrace-kafka-");
        int port = freePort();
        int controller = freePort();
        TcpProxy proxy = via == null ? null : new TcpProxy(via.port(), port);
        Properties p = new Properties();
        p.put("process.roles", "broker,controller");
        p.put("node.id", "1");
        if (proxy == null) {
            p.put("listeners", "PLAINTEXT://127.0.0.1:" + port + ",CONTROLLER://127.0.0.1:" + controller);
            p.put("advertised.listeners", "PLAINTEXT://127.0.0.1:" + port);
            p.put("inter.broker.listener.name", "PLAINTEXT");
            p.put("listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT");
        } else {
            // clients come in through the proxy (EXTERNAL, advertised at its port); the broker's own traffic does not
            int internal = freePort();
            p.put("listeners", "EXTERNAL://127.0.0.1:" + port + ",INTERNAL://127.0.0.1:" + internal + ",CONTROLLER://127.0.0.1:" + controller);
            p.put("advertised.listeners", "EXTERNAL://127.0.0.1:" + proxy.port() + ",INTERNAL://127.0.0.1:" + internal);
            p.put("inter.broker.listener.name", "INTERNAL");
            p.put("listener.security.protocol.map", "EXTERNAL:PLAINTEXT,INTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT");
            proxy.restore();
        }
        p.put("controller.listener.names", "CONTROLLER");
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
        String bootstrap = "127.0.0.1:" + (proxy == null ? port : proxy.port());
        try {
            server.startup();
            awaitReady(bootstrap);
        } catch (Exception e) {
            server.shutdown();
            server.awaitShutdown();
            if (proxy != null) {
                proxy.close();
            }
            delete(dir);
            throw e;
        }
        return new KafkaBroker(config, server, dir, bootstrap, proxy);
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

    /**
     * A free port above the ephemeral range (32768-60999 on Linux): the broker binds it a moment after this check, and a
     * port the OS handed out (port 0) could meanwhile be taken by any client connection of the test JVM — a CI run failed
     * on "Socket server failed to bind to 127.0.0.1:42607: Address already in use" (KafkaOutageIT).
     */
    private static int freePort() throws IOException {
        java.util.Random rnd = new java.util.Random();
        for (int i = 0; i < 200; i++) {
            int port = 61_000 + rnd.nextInt(4_000);
            try (ServerSocket s = new ServerSocket()) {
                s.bind(new java.net.InetSocketAddress("127.0.0.1", port));
                return port;
            } catch (IOException taken) {
                // another one
            }
        }
        throw new IOException("no free port in 61000-64999");
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

    /** Shuts the broker down, keeping its data: clients see it unreachable until {@link #restart()}. */
    public void stop() {
        if (server != null) {
            server.shutdown();
            server.awaitShutdown();
            server = null;
        }
    }

    /** Starts the stopped broker again, on the same port with the same data, and waits until it serves. */
    public void restart() throws Exception {
        if (server != null) {
            throw new IllegalStateException("the broker at " + bootstrap + " is running");
        }
        KafkaRaftServer s = new KafkaRaftServer(config, Time.SYSTEM);
        s.startup();
        server = s;
        awaitReady(bootstrap);
    }

    @Override
    public void close() throws Exception {
        if (proxy != null) {
            proxy.close();
        }
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
