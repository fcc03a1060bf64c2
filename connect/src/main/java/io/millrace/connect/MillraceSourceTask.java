package io.millrace.connect;

import io.millrace.api.Change;
import io.millrace.api.Checkpoints;
import io.millrace.api.Millrace;
import io.millrace.api.TransactionalConsumer;
import io.millrace.core.change.Checkpoint;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.source.SourceRecord;
import org.apache.kafka.connect.source.SourceTask;
import org.apache.kafka.connect.source.TransactionContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The connector's only task: a Millrace pipeline whose destination is this task, as a {@link TransactionalConsumer}
 * whose "transaction" is Connect's offset commit.
 *
 * <p>Flow: the engine thread turns each batch into records ({@link RecordMaker}) and hands them over
 * ({@link Handoff#deliver}, blocking until they are in Kafka); Connect's thread takes them in
 * {@link #poll} (one batch per poll, and with connector-defined boundaries one Kafka transaction per batch:
 * {@link TransactionContext#commitTransaction()}), and tells the hand-off what it acknowledged and committed
 * ({@link #commitRecord}, {@link #commit}). The consumer stores later: the engine confirms the slot only up to the
 * offsets Connect stored ({@link Handoff#stored}, INV: DURABLE), not up to the batches it handed over.
 *
 * <p>Offsets: partition {@code {"server": <topic.prefix>}}, offset {@code {"checkpoint": <Millrace checkpoint JSON>}}
 * (position, snapshot progress and the pipeline's identity). The engine starts from the committed one (INV: RESUME) and
 * refuses one of another system, database or slot (INV: IDENTITY: the engine checks the checkpoint's identity).
 */
public final class MillraceSourceTask extends SourceTask {
    static final String OFFSET_KEY = "checkpoint";
    private static final Logger LOG = LoggerFactory.getLogger(MillraceSourceTask.class);
    private static final long POLL_WAIT_MS = 500;

    private ConnectorSettings settings;
    private RecordMaker maker;
    private Handoff handoff;
    private TransactionContext transactions;
    private Millrace millrace;
    private TaskMetrics metrics;
    private volatile boolean stopping;
    private volatile boolean started;
    /** The pipeline ended without an error (an initial_only snapshot is done). Task thread only. */
    private boolean idle;

    @Override
    public String version() {
        return Version.VERSION;
    }

    @Override
    public void start(Map<String, String> props) {
        settings = new ConnectorSettings(props);
        maker = new RecordMaker(settings.topicPrefix(), new io.millrace.core.event.EnvelopeWriter(new io.millrace.core.event.SourceMeta(
                settings.topicPrefix(), settings.database())), settings.tombstones(), settings.truncates(), settings.transactionTopic(),
                settings.modes());
        transactions = context.transactionContext(); // null unless exactly once with transaction.boundary=connector
        handoff = new Handoff(transactions != null, settings.commitTimeoutMs(), () -> context.offsetStorageReader().offset(maker.partition()));
        millrace = Millrace.builder().name(settings.topicPrefix()).source(settings.source()).snapshot(settings.snapshot())
                .pipeline(settings.pipeline()).transactionalConsumer("connect", new Consumer()).build();
        LOG.info("Millrace task for {} starts (slot {}, {} transaction boundaries)", settings.topicPrefix(), settings.slot(),
                transactions != null ? "connector-defined" : "worker-defined");
        metrics = new TaskMetrics(context.pluginMetrics(), millrace::status);
        millrace.start();
        started = true;
        metrics.addPending(); // never throws: a start that failed after the engine's would leave the engine running
    }

    @Override
    public List<SourceRecord> poll() throws InterruptedException {
        metrics.addPending();
        List<SourceRecord> records = handoff.take(POLL_WAIT_MS);
        if (records == null) {
            ended();
            return null;
        }
        if (transactions != null) {
            transactions.commitTransaction(); // INV: a Kafka transaction holds whole engine batches (source transactions or cuts of one)
        }
        return records;
    }

    /**
     * Fails the task when the engine ended by itself with an error; after an {@code initial_only} snapshot, which ends
     * the pipeline without one, the task idles (as Debezium's does).
     */
    private void ended() throws InterruptedException {
        if (stopping || idle) {
            return;
        }
        try {
            if (millrace.await(Duration.ZERO)) {
                idle = true;
                LOG.info("the Millrace pipeline of {} ended ({}); the task idles until it is stopped", settings.topicPrefix(),
                        millrace.status().state());
            }
        } catch (RuntimeException e) {
            throw e instanceof ConnectException c ? c : new ConnectException("the Millrace pipeline failed: " + SourceValidation.connectorKeys(e.getMessage()),
                    SourceValidation.withConnectorKeys(e));
        }
    }

    @Override
    public void commitRecord(SourceRecord record, RecordMetadata metadata) {
        handoff.acked(record);
    }

    @Override
    public void commit() {
        handoff.committed();
    }

    @Override
    public void stop() {
        stopping = true;
        if (handoff != null) {
            handoff.close(); // the engine's accept waiting for a commit gives up: its batch is delivered again
        }
        if (started) {
            millrace.stop();
            try {
                if (!millrace.await(Duration.ofSeconds(30))) {
                    LOG.warn("the Millrace pipeline of {} did not stop within 30 s", settings.topicPrefix());
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } catch (RuntimeException e) {
                LOG.info("the Millrace pipeline of {} stopped: {}", settings.topicPrefix(), e.getMessage());
            }
        }
    }

    /** The pipeline's destination: batches go to Connect through the hand-off; the checkpoint is Connect's offset. */
    private final class Consumer implements TransactionalConsumer {
        private Map<String, String> lastOffset;

        @Override
        public Optional<Checkpoint> open() throws InterruptedException {
            handoff.quiesce();
            Map<String, Object> offset = context.offsetStorageReader().offset(maker.partition());
            Object json = offset == null ? null : offset.get(OFFSET_KEY);
            if (offset != null && json == null) {
                throw new ConnectException("the committed offset of " + maker.partition() + " is not Millrace's (no '" + OFFSET_KEY
                        + "'): " + offset + "; a Debezium connector's offsets cannot be resumed from, use a new topic.prefix or"
                        + " delete the offsets (DELETE /connectors/<name>/offsets)");
            }
            // The open transaction's counts; ignored (and not carried on) when transaction metadata is off.
            Object transaction = offset == null || maker.transactions() == null ? null : offset.get(TransactionMetadata.OFFSET_KEY);
            if (maker.transactions() != null) {
                // A task resumed inside a source transaction that a batch cut continues its counts (no second BEGIN).
                maker.transactions().restore(transaction == null ? null : transaction.toString());
            }
            if (json == null) {
                lastOffset = null;
                return Optional.empty();
            }
            Checkpoint cp = Checkpoints.fromJson(json.toString());
            lastOffset = offset(json.toString(), transaction == null ? null : transaction.toString());
            return Optional.of(cp); // INV: RESUME (and IDENTITY: the engine compares the checkpoint's identity with its own)
        }

        @Override
        public void accept(List<Change> batch, Checkpoint checkpoint) throws InterruptedException {
            List<SourceRecord> records = new ArrayList<>(batch.size() + 4);
            // Every record but the last carries the offset before the batch (none before the first): a commit inside the
            // batch (at least once, or a task stopped while the worker retries a send) resumes before the batch.
            Map<String, String> before = lastOffset;
            for (Change c : batch) {
                maker.add(c.event(), before, records);
            }
            TransactionMetadata tx = maker.transactions();
            if (tx != null) {
                tx.complete(checkpoint.flushLsn(), before, records); // the END of a transaction this batch completes
            }
            // The offset after the batch: the checkpoint, and the transaction the batch leaves open (a cut one), both
            // committed with the batch's records in one Kafka transaction.
            Map<String, String> offset = offset(Checkpoints.toJson(checkpoint), tx == null ? null : tx.state());
            if (records.isEmpty()) {
                records.add(maker.heartbeat(settings.heartbeatTopic(), offset, System.currentTimeMillis()));
            } else {
                records.set(records.size() - 1, withOffset(records.get(records.size() - 1), offset));
            }
            handoff.deliver(new Handoff.Batch(records, checkpoint)); // returns once the batch is in Kafka (INV: BOUNDED)
            lastOffset = offset;
        }

        /** The checkpoint goes with the offset, which Connect stores after the records (see {@link Handoff}). */
        @Override
        public boolean storesLater() {
            return true;
        }

        /** What Connect has stored: the engine confirms the slot up to it only (INV: DURABLE). */
        @Override
        public Optional<Checkpoint> stored() {
            return handoff.stored();
        }
    }

    /** The offset {@code {"checkpoint": ..., "transaction": ...}}, the second only while a source transaction is open. */
    private static Map<String, String> offset(String checkpoint, String transaction) {
        return transaction == null ? Map.of(OFFSET_KEY, checkpoint) : Map.of(OFFSET_KEY, checkpoint, TransactionMetadata.OFFSET_KEY,
                transaction);
    }

    private static SourceRecord withOffset(SourceRecord r, Map<String, ?> offset) {
        return new SourceRecord(r.sourcePartition(), offset, r.topic(), r.kafkaPartition(), r.keySchema(), r.key(), r.valueSchema(),
                r.value(), r.timestamp(), r.headers());
    }
}
