package io.millrace.cli.crash;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.millrace.core.Lsn;
import io.millrace.embedded.EmbeddedPg;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;

/**
 * Samples INV: DURABLE every {@code ~50 ms}: the slot's {@code confirmed_flush_lsn} must never pass
 * the durable checkpoint of any destination.
 *
 * <p>Order matters: the slot is read FIRST, the checkpoints after. Durable checkpoints only move
 * forward, so {@code confirmed(t1) <= durable(t1) <= durable(t2)}: a sample can only miss a
 * violation, never invent one.
 *
 * <p>Skipped samples: no slot yet (or it has no confirmed position); a destination without a
 * checkpoint yet; a checkpoint whose snapshot is {@code RUNNING} — such a checkpoint is never resumed
 * from (the engine re-copies everything on a new slot), and while the engine drops and re-creates the
 * slot for that re-copy the new slot is legitimately ahead of the old, abandoned checkpoint. Those
 * samples are counted, and the largest overshoot over a RUNNING checkpoint is reported for information.
 */
final class DurableSampler implements Runnable {
    private static final ObjectMapper JSON = new ObjectMapper();

    /** A destination's durable checkpoint as read from where it is stored. */
    record Durable(Lsn flushLsn, String applied, String snapshotState) {
        @Override
        public String toString() {
            return "flush " + flushLsn + ", applied " + applied + ", snapshot " + snapshotState;
        }
    }

    /** Reads one destination's durable checkpoint (null: none yet). Called on the sampler thread only. */
    @FunctionalInterface
    interface CheckpointReader {
        Durable read() throws Exception;
    }

    /** A destination to sample: its name (for messages) and how to read its checkpoint where it is stored. */
    record Destination(String name, CheckpointReader reader) {
    }

    private final EmbeddedPg pg;
    private final String sourceDb;
    private final String slot;
    private final List<Destination> destinations;
    private volatile boolean stop;
    private final List<String> violations = new ArrayList<>();
    private final List<String> errors = new ArrayList<>();
    private long samples;
    private long checked;
    private long noSlot;
    private long noCheckpoint;
    private long running;
    private long maxGap = -1;
    private long maxRunningOvershoot;

    /** A postgres destination (database {@code destinationDb} of the same server) and a jsonl destination. */
    DurableSampler(EmbeddedPg pg, String sourceDb, String destinationDb, String slot, String pgDestination, Path jsonlState) {
        this(pg, sourceDb, slot, List.of(postgres(pg, destinationDb, pgDestination), jsonl(jsonlState)));
    }

    DurableSampler(EmbeddedPg pg, String sourceDb, String slot, List<Destination> destinations) {
        this.pg = pg;
        this.sourceDb = sourceDb;
        this.slot = slot;
        this.destinations = List.copyOf(destinations);
    }

    /** The checkpoint row of postgres destination {@code destination} in database {@code db} of {@code pg}. */
    static Destination postgres(EmbeddedPg pg, String db, String destination) {
        return new Destination(destination, () -> {
            try (Connection dst = pg.connect(db)) {
                return postgresCheckpoint(dst, destination);
            }
        });
    }

    /** The checkpoint in a jsonl destination's state file. */
    static Destination jsonl(Path stateFile) {
        return new Destination("jsonl " + stateFile.getParent().getFileName(), () -> jsonlCheckpoint(stateFile));
    }

    void stop() {
        stop = true;
    }

    @Override
    public void run() {
        while (!stop) {
            try (Connection src = pg.connect(sourceDb)) {
                while (!stop) {
                    sample(src);
                    Thread.sleep(50);
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            } catch (Exception e) {
                synchronized (this) {
                    errors.add(e.toString());
                    if (errors.size() > 20) {
                        return; // reported as a failure by the test
                    }
                }
            }
        }
    }

    /** One sample on fresh connections (the test's own check that a violation is seen). */
    void sampleOnce() throws Exception {
        try (Connection src = pg.connect(sourceDb)) {
            sample(src);
        }
    }

    private void sample(Connection src) throws Exception {
        // 1. the slot, first (see the class comment)
        Lsn confirmed = confirmedFlush(src, slot);
        // 2. then every durable checkpoint
        List<Durable> durable = new ArrayList<>();
        for (Destination d : destinations) {
            durable.add(d.reader().read());
        }
        synchronized (this) {
            samples++;
            if (confirmed == null) {
                noSlot++;
                return;
            }
            if (durable.contains(null)) {
                noCheckpoint++;
                return;
            }
            Lsn min = durable.stream().map(Durable::flushLsn).reduce(Lsn::min).orElseThrow();
            if (durable.stream().anyMatch(d -> "RUNNING".equals(d.snapshotState()))) {
                running++;
                if (confirmed.isAfter(min)) {
                    maxRunningOvershoot = Math.max(maxRunningOvershoot, confirmed.value() - min.value());
                }
                return;
            }
            checked++;
            if (confirmed.compareTo(min) > 0) {
                // INV: DURABLE
                List<String> each = new ArrayList<>();
                for (int i = 0; i < destinations.size(); i++) {
                    each.add(destinations.get(i).name() + " " + durable.get(i));
                }
                String v = String.format("slot '%s' confirmed_flush_lsn %s > durable checkpoint %s (%s)",
                        slot, confirmed, min, String.join(", ", each));
                violations.add(v);
                if (!stop) {
                    System.err.println("CrashIT DURABLE VIOLATION: " + v);
                }
            } else {
                maxGap = Math.max(maxGap, min.value() - confirmed.value());
            }
        }
    }

    static Lsn confirmedFlush(Connection src, String slot) throws SQLException {
        try (PreparedStatement ps = src.prepareStatement(
                "SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = ?")) {
            ps.setString(1, slot);
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next() || rs.getString(1) == null) {
                    return null;
                }
                return Lsn.parse(rs.getString(1));
            }
        }
    }

    /** The postgres destination's checkpoint row, or null when there is none (yet). */
    static Durable postgresCheckpoint(Connection dst, String destination) throws SQLException {
        try (PreparedStatement exists = dst.prepareStatement("SELECT to_regclass('millrace.checkpoints') IS NOT NULL");
             ResultSet rs = exists.executeQuery()) {
            rs.next();
            if (!rs.getBoolean(1)) {
                return null;
            }
        }
        try (PreparedStatement ps = dst.prepareStatement("SELECT checkpoint->>'flush_lsn', checkpoint->'snapshot'->>'state',"
                + " (checkpoint->>'applied_commit_lsn') || '#' || (checkpoint->>'applied_ordinal')"
                + " FROM millrace.checkpoints WHERE destination = ?")) {
            ps.setString(1, destination);
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) {
                    return null;
                }
                return new Durable(Lsn.parse(rs.getString(1)), rs.getString(3), rs.getString(2));
            }
        }
    }

    /** The jsonl destination's checkpoint from its state file, or null when there is none (yet). */
    static Durable jsonlCheckpoint(Path stateFile) throws IOException {
        JsonNode root = jsonlState(stateFile);
        if (root == null || root.path("checkpoint").isNull() || root.path("checkpoint").isMissingNode()) {
            return null;
        }
        JsonNode cp = root.get("checkpoint");
        return new Durable(Lsn.parse(cp.get("flush_lsn").asText()), cp.path("applied_commit_lsn").asText() + "#"
                + cp.path("applied_ordinal").asText(), cp.path("snapshot").path("state").asText());
    }

    /** The whole state file, or null when it does not exist. It is replaced by rename, so never torn. */
    static JsonNode jsonlState(Path stateFile) throws IOException {
        byte[] bytes;
        try {
            bytes = Files.readAllBytes(stateFile);
        } catch (NoSuchFileException e) {
            return null;
        }
        return JSON.readTree(bytes);
    }

    synchronized List<String> violations() {
        return List.copyOf(violations);
    }

    synchronized List<String> errors() {
        return List.copyOf(errors);
    }

    synchronized String summary() {
        return String.format("samples=%d checked=%d (skipped: no slot %d, no checkpoint %d, snapshot RUNNING %d)"
                        + " violations=%d max gap durable-confirmed=%d bytes (largest overshoot over an abandoned RUNNING"
                        + " checkpoint: %d bytes)", samples, checked, noSlot, noCheckpoint, running, violations.size(), maxGap,
                maxRunningOvershoot);
    }

    synchronized long checked() {
        return checked;
    }
}
