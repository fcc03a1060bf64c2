package io.millrace.engine;

import io.millrace.core.MillraceException;
import io.millrace.core.MillraceException.Kind;
import io.millrace.core.change.Checkpoint;
import io.millrace.core.change.Identity;
import io.millrace.core.schema.Ident;
import io.millrace.core.schema.TableRef;
import io.millrace.core.sink.Sink;
import io.millrace.core.sink.SinkReset;
import io.millrace.engine.config.EngineConfig;
import io.millrace.source.PgConnections;
import io.millrace.source.PgErrors;
import io.millrace.source.PipelineLock;
import io.millrace.source.Preflight;
import io.millrace.source.SlotManager;
import io.millrace.source.SourceConfig;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * {@code millrace reset}: removes one pipeline's state — its replication slot and each destination's checkpoint —
 * so that the next run starts afresh, with a new slot and a new snapshot. {@link #plan} reads everything and changes
 * nothing; {@link #apply()} then does what {@link #actions()} lists.
 *
 * <p>Safety: the plan takes the pipeline's lock ({@link PipelineLock}) and holds it until {@link #close()}, so it is
 * refused while an engine runs the pipeline, and no engine starts meanwhile ({@link Kind#SLOT_IN_USE}); a slot some
 * other process reads is refused too. Every checkpoint found must be this pipeline's: one of another identity (system,
 * database, slot, publication, destination) stops the reset before anything is removed ({@link Kind#IDENTITY}). The
 * slot and the publication are dropped only when some destination holds a checkpoint of this pipeline: a slot nobody
 * claimed may be another pipeline's (INV: IDENTITY), as {@link Engine} holds too.
 *
 * <p>Order: the slot (and the publication) first, then the destinations. A reset that fails half way leaves
 * checkpoints without a slot, which a second reset removes; the other order could leave a slot nobody claims.
 */
public final class Reset implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(Reset.class);

    /**
     * @param data            what happens to the copied data (tables, events files)
     * @param dropPublication also drop the publication (otherwise kept: it holds no position and retains no WAL)
     */
    public record Options(SinkReset.Data data, boolean dropPublication) {
    }

    private final EngineConfig config;
    private final Options options;
    private final PgConnections conns;
    private final PipelineLock lock;
    private final List<Sink> sinks;
    private final List<SinkReset> plans;
    private final SlotMonitor.Sample slot;
    private final boolean publicationExists;
    /** Whether Millrace created the publication ({@link io.millrace.source.Publisher#MARK}): only then may reset drop it. */
    private final boolean publicationMine;
    private final boolean claimed;

    private Reset(EngineConfig config, Options options, PgConnections conns, PipelineLock lock, List<Sink> sinks, List<SinkReset> plans,
                  SlotMonitor.Sample slot, boolean publicationExists, boolean publicationMine) {
        this.config = config;
        this.options = options;
        this.conns = conns;
        this.lock = lock;
        this.sinks = sinks;
        this.plans = plans;
        this.slot = slot;
        this.publicationExists = publicationExists;
        this.publicationMine = publicationMine;
        this.claimed = plans.stream().anyMatch(p -> p.checkpoint().isPresent());
    }

    /**
     * Reads what a reset of {@code config}'s pipeline would do and checks that it may, changing nothing.
     *
     * @throws MillraceException {@link Kind#SLOT_IN_USE} while an engine runs the pipeline or a process reads its slot,
     *                           {@link Kind#IDENTITY} when a destination holds another pipeline's checkpoint
     */
    public static Reset plan(EngineConfig config, Options options) {
        SourceConfig src = config.source();
        PgConnections conns = new PgConnections(src);
        PipelineLock lock;
        try {
            lock = PipelineLock.acquire(conns);
        } catch (MillraceException e) {
            if (e.kind() == Kind.SLOT_IN_USE) {
                throw new MillraceException(Kind.SLOT_IN_USE, "cannot reset pipeline '" + config.name() + "' while it runs: "
                        + e.getMessage().replace(", or give this one its own source.slot", ""), e);
            }
            throw e;
        }
        List<Sink> sinks = new ArrayList<>();
        List<SinkReset> plans = new ArrayList<>();
        try {
            SlotMonitor.Sample slot;
            Preflight.Report report;
            boolean mine;
            try (Connection c = conns.open(); Connection at = conns.openCapture()) { // at: the server the slot is on
                new SlotManager(src).requireFree(at);
                slot = SlotMonitor.sample(at, src.slot());
                report = Preflight.run(conns, c);
                mine = io.millrace.source.Publisher.marked(c, src.publication());
            } catch (SQLException e) {
                throw PgErrors.translate("reading the slot and tables of " + src.where(), e);
            }
            String systemId;
            try (Connection repl = conns.openReplication()) {
                systemId = SlotManager.identify(repl).systemId();
            } catch (SQLException e) {
                throw PgErrors.translate("identifying the source system", e);
            }
            List<TableRef> tables = report.tables();
            sinks.addAll(Destinations.of(config));
            for (Sink s : sinks) {
                SinkReset p = s.reset(tables, options.data());
                plans.add(p);
                Optional<Checkpoint> cp = p.checkpoint();
                Identity ours = new Identity(systemId, src.database(), src.slot(), src.publication(), s.name());
                String diff = cp.isPresent() ? ours.difference(cp.get().identity()) : null;
                if (diff != null) {
                    // INV: IDENTITY — never remove another pipeline's state; refused before anything is removed.
                    throw new MillraceException(Kind.IDENTITY, "destination '" + s.name() + "' holds a checkpoint of another pipeline: "
                            + diff + ". Reset removes only this pipeline's state, so it removed nothing. Reset that pipeline with its own"
                            + " configuration, or point this destination elsewhere");
                }
            }
            return new Reset(config, options, conns, lock, sinks, plans, slot.confirmedLsn() == null ? null : slot, report.publicationExists(),
                    mine);
        } catch (Exception e) {
            plans.forEach(SinkReset::close);
            sinks.forEach(Sink::close);
            lock.close();
            if (e instanceof RuntimeException r) {
                throw r;
            }
            throw new MillraceException(Kind.SOURCE_SETUP, "reading slot '" + src.slot() + "' failed: " + e.getMessage(), e);
        }
    }

    /** What {@link #apply()} does, one line each; empty when there is nothing to reset. */
    public List<String> actions() {
        SourceConfig src = config.source();
        List<String> a = new ArrayList<>();
        if (slot != null && claimed) {
            a.add("drop replication slot '" + src.slot() + "' on " + src.where() + " (confirmed up to " + slot.confirmedLsn()
                    + (slot.retainedBytes() >= 0 ? ", holding " + mib(slot.retainedBytes()) + " of WAL" : "") + ")");
        }
        if (dropsPublication()) {
            a.add("drop publication '" + src.publication() + "' on " + src.where());
        }
        for (int i = 0; i < plans.size(); i++) {
            for (String line : plans.get(i).actions()) {
                a.add("destination '" + sinks.get(i).name() + "': " + line);
            }
        }
        return a;
    }

    /** What stays although one might expect it to go, one line each, with the reason. */
    public List<String> keeps() {
        SourceConfig src = config.source();
        List<String> k = new ArrayList<>();
        if (slot != null && !claimed) {
            k.add("replication slot '" + src.slot() + "': no destination holds a checkpoint of this pipeline, so it may be another"
                    + " pipeline's. If it is this one's, drop it: SELECT pg_drop_replication_slot(" + Ident.literal(src.slot()) + ");");
        }
        if (publicationExists && !dropsPublication()) {
            k.add("publication '" + src.publication() + "'" + (options.dropPublication() ? (publicationMine ? ": no destination holds a"
                    + " checkpoint of this pipeline" : ": Millrace did not create it (it lacks the comment '" + io.millrace.source.Publisher.MARK
                    + "'), so another consumer may use it") + ". Drop it yourself if it is this one's: DROP PUBLICATION "
                    + Ident.quote(src.publication()) + ";"
                    : " (it holds no position and retains no WAL; the next run uses it again; --drop-publication drops it)"));
        }
        for (int i = 0; i < plans.size(); i++) {
            for (String line : plans.get(i).keeps()) {
                k.add("destination '" + sinks.get(i).name() + "': " + line);
            }
        }
        return k;
    }

    /** --drop-publication, of a publication that exists, that Millrace created, for a pipeline a destination holds. */
    private boolean dropsPublication() {
        return options.dropPublication() && publicationExists && publicationMine && claimed;
    }

    /** Does what {@link #actions()} lists: the slot and publication first, then each destination in turn. */
    public void apply() {
        SlotManager slots = new SlotManager(config.source());
        if (claimed && (slot != null || dropsPublication())) {
            try (Connection c = conns.open(); Connection at = conns.openCapture()) {
                if (slot != null) {
                    slots.dropSlot(at); // refused by the server while a process reads it
                    LOG.info("reset: dropped replication slot '{}'", config.source().slot());
                }
                if (dropsPublication()) {
                    new io.millrace.source.Publisher(config.source()).drop(c);
                    LOG.info("reset: dropped publication '{}'", config.source().publication());
                }
            } catch (SQLException e) {
                throw PgErrors.translate("closing a connection to the source", e);
            }
        }
        for (int i = 0; i < plans.size(); i++) {
            plans.get(i).apply();
            LOG.info("reset: destination '{}' done", sinks.get(i).name());
        }
    }

    /** Releases the destinations and the pipeline's lock. */
    @Override
    public void close() {
        plans.forEach(SinkReset::close);
        sinks.forEach(Sink::close);
        lock.close();
    }

    private static String mib(long bytes) {
        return bytes < (1 << 20) ? bytes / 1024 + " KiB" : (bytes >> 20) + " MiB";
    }
}
