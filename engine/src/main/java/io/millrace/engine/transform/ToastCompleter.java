package io.millrace.engine.transform;

import io.millrace.core.change.ChangeEvent;
import io.millrace.core.change.Op;
import io.millrace.core.schema.ColumnInfo;
import io.millrace.core.schema.RelationInfo;
import io.millrace.core.types.UnchangedToast;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * {@code transforms.toast: complete}: gives an update's unchanged TOASTed columns their value, for a destination that
 * keeps no rows of its own to take it from (Kafka, jsonl, a destination of your own that is not keyed).
 *
 * <p>PostgreSQL leaves a TOASTed value out of an update's new row when the update did not change it, and, unless the
 * table has REPLICA IDENTITY FULL, out of the old row too: the stream does not have it. Where the value comes from, in
 * this order:
 * <ol>
 *   <li>the old row, when the table has REPLICA IDENTITY FULL (exact);</li>
 *   <li>a cache of the last row image this destination was given for the key (the initial snapshot's, an online copy's,
 *       a streamed insert's or update's), followed in stream order, so the value is the one the column had at that
 *       change (exact). The cache holds at most {@code transforms.toast_cache_mb} (estimated heap), least recently used
 *       rows leave first (INV: BOUNDED), and starts empty at each start;</li>
 *   <li>otherwise the source's current row, read by key (one query per table per batch, for every key the batch
 *       misses): the value the column has when Millrace reads it, which is the change's or a later one, never an
 *       earlier one. A row deleted in the source before that read keeps the placeholder.</li>
 * </ol>
 *
 * <p>Threads: the destination's writer thread only (one instance per destination, like the sink it serves).
 */
final class ToastCompleter {
    private static final Logger LOG = LoggerFactory.getLogger(ToastCompleter.class);
    /** Types whose values are never TOASTed (fixed length): a table of only these needs no cache. */
    private static final Set<Integer> FIXED = Set.of(16, 18, 20, 21, 23, 26, 28, 29, 700, 701, 790, 829, 1082, 1083, 1114, 1184, 1186,
            1266, 2950, 3220);

    private final long maxBytes;
    private final ToastLookup lookup;
    private final LinkedHashMap<Key, Entry> cache = new LinkedHashMap<>(1024, 0.75f, true);
    private final Map<RelationInfo, Boolean> cacheable = new java.util.IdentityHashMap<>();
    private long bytes;
    private long fromCache;
    private long fromOldRow;
    private long fromSource;
    private long left;

    ToastCompleter(long maxBytes, ToastLookup lookup) {
        this.maxBytes = maxBytes;
        this.lookup = lookup;
    }

    /** A row's key within its table: the key columns' values, compared by content. */
    private record Key(int oid, Object[] values) {
        @Override
        public boolean equals(Object o) {
            return o instanceof Key k && k.oid == oid && Arrays.deepEquals(k.values, values);
        }

        @Override
        public int hashCode() {
            return 31 * oid + Arrays.deepHashCode(values);
        }
    }

    private record Entry(RelationInfo shape, Object[] row, long cost) {
    }

    /** {@code events} with every unchanged TOASTed value it can give filled in (a new list when any changed). */
    List<ChangeEvent> complete(List<ChangeEvent> events) {
        Map<Key, Object[]> fetched = fetch(events);
        batch.clear();
        List<ChangeEvent> out = events;
        for (int i = 0; i < events.size(); i++) {
            ChangeEvent e = events.get(i);
            ChangeEvent c = follow(e, fetched);
            if (c != e && out == events) {
                out = new ArrayList<>(events);
            }
            if (out != events) {
                out.set(i, c);
            }
        }
        batch.clear();
        return out;
    }

    /**
     * The rows this batch gave so far, by key (a deleted row as null): what {@link #fetch} counted on as known, kept here
     * as well as in the cache, which may push them out before a later event of the batch needs them. Bounded by the
     * batch, which holds these rows anyway.
     */
    private final Map<Key, Object[]> batch = new HashMap<>();

    /** Counters for the log and tests: values given from the old row, the cache, the source, and left as placeholders. */
    long[] counts() {
        return new long[] {fromOldRow, fromCache, fromSource, left};
    }

    /** Follows {@code e} in the cache, and returns it completed. */
    private ChangeEvent follow(ChangeEvent e, Map<Key, Object[]> fetched) {
        RelationInfo r = e.relation();
        switch (e.op()) {
            case READ, CREATE -> {
                if (cacheable(r)) {
                    put(key(r, e.after(), null), r, e.after());
                }
                return e;
            }
            case DELETE -> {
                if (cacheable(r)) {
                    remove(key(r, e.before(), null));
                }
                return e;
            }
            case TRUNCATE -> {
                batch.keySet().removeIf(k -> k.oid() == r.oid());
                cache.entrySet().removeIf(x -> {
                    boolean of = x.getKey().oid() == r.oid();
                    if (of) {
                        bytes -= x.getValue().cost();
                    }
                    return of;
                });
                return e;
            }
            case UPDATE -> {
                return update(e, fetched);
            }
            default -> {
                return e;
            }
        }
    }

    /** Follows the update {@code e} in the cache, and returns it with its unchanged TOASTed values filled in where it can. */
    private ChangeEvent update(ChangeEvent e, Map<Key, Object[]> fetched) {
        RelationInfo r = e.relation();
        Object[] after = e.after();
        Key oldKey = cacheable(r) ? key(r, e.before() != null ? e.before() : after, after) : null;
        Key newKey = cacheable(r) ? key(r, after, e.before()) : null;
        if (!UnchangedToast.in(after)) {
            move(oldKey, newKey, r, after);
            return e;
        }
        Entry cached = oldKey == null ? null : cache.get(oldKey);
        Object[] known = oldKey != null && batch.containsKey(oldKey) ? batch.get(oldKey)
                : cached != null && cached.shape().sameShape(r) ? cached.row() : null;
        Object[] read = oldKey == null ? null : fetched.get(oldKey);
        Object[] filled = after.clone();
        for (int i = 0; i < filled.length; i++) {
            if (filled[i] != UnchangedToast.INSTANCE) {
                continue;
            }
            Object[] b = e.before();
            if (r.replicaIdentity() == 'f' && b != null && i < b.length && b[i] != UnchangedToast.INSTANCE) {
                filled[i] = b[i];
                fromOldRow++;
            } else if (known != null && i < known.length && known[i] != UnchangedToast.INSTANCE) {
                filled[i] = known[i];
                fromCache++;
            } else if (read != null && read[i] != UnchangedToast.INSTANCE) {
                filled[i] = read[i];
                fromSource++;
            } else {
                left++;
            }
        }
        move(oldKey, newKey, r, filled);
        return new ChangeEvent(e.op(), r, e.before(), filled, e.lsn(), e.position(), e.xid(), e.commitTimeMicros(), e.snapshot());
    }

    private void move(Key oldKey, Key newKey, RelationInfo r, Object[] row) {
        if (newKey == null) {
            return;
        }
        if (oldKey != null && !oldKey.equals(newKey)) {
            remove(oldKey);
        }
        put(newKey, r, row);
    }

    /**
     * The source's rows for the keys of {@code events}' updates that neither an old row, the cache nor an earlier event of
     * the batch can complete: read by key, in one query per table; and the cached rows the batch needs, pinned. A failed
     * read leaves those values as placeholders (logged): the batch is not held back.
     */
    private Map<Key, Object[]> fetch(List<ChangeEvent> events) {
        Set<Key> known = new HashSet<>();
        Map<Integer, Set<Integer>> truncated = new HashMap<>();
        Map<RelationInfo, Map<Key, Object[]>> wanted = new LinkedHashMap<>();
        Map<Key, Object[]> pinned = new HashMap<>();
        for (ChangeEvent e : events) {
            RelationInfo r = e.relation();
            if (e.op() == Op.TRUNCATE) {
                truncated.put(r.oid(), Set.of());
                known.removeIf(k -> k.oid() == r.oid());
                continue;
            }
            if (!cacheable(r) || (e.op() != Op.UPDATE && e.op() != Op.CREATE && e.op() != Op.READ && e.op() != Op.DELETE)) {
                continue;
            }
            if (e.op() == Op.DELETE) {
                known.remove(key(r, e.before(), null));
                continue;
            }
            Object[] after = e.after();
            Key newKey = key(r, after, e.before());
            if (e.op() == Op.UPDATE && UnchangedToast.in(after) && !(r.replicaIdentity() == 'f' && e.before() != null)) {
                Key oldKey = key(r, e.before() != null ? e.before() : after, after);
                Entry c = oldKey == null ? null : cache.get(oldKey);
                boolean cached = c != null && c.shape().sameShape(r) && !truncated.containsKey(r.oid()) && complete(c.row(), after);
                if (oldKey != null && !known.contains(oldKey)) {
                    if (cached) {
                        pinned.put(oldKey, c.row()); // in case earlier rows of the batch push it out of the cache
                    } else {
                        wanted.computeIfAbsent(r, x -> new LinkedHashMap<>()).put(oldKey, null);
                    }
                }
            }
            if (newKey != null) {
                known.add(newKey);
            }
        }
        Map<Key, Object[]> out = pinned;
        for (Map.Entry<RelationInfo, Map<Key, Object[]>> w : wanted.entrySet()) {
            RelationInfo r = w.getKey();
            List<Key> keys = new ArrayList<>(w.getValue().keySet());
            try {
                List<Object[]> rows = lookup.rows(r, keys.stream().map(Key::values).toList());
                for (int i = 0; i < keys.size(); i++) {
                    if (rows.get(i) != null) {
                        out.put(keys.get(i), rows.get(i));
                    }
                }
            } catch (RuntimeException ex) {
                LOG.warn("transforms.toast complete: could not read {} row(s) of {} from the source ({}); their unchanged TOAST values"
                        + " go out as the placeholder", keys.size(), r.table(), ex.getMessage());
            }
        }
        return out;
    }

    /** Whether {@code cached} has a value for every column {@code after} leaves unchanged. */
    private static boolean complete(Object[] cached, Object[] after) {
        for (int i = 0; i < after.length; i++) {
            if (after[i] == UnchangedToast.INSTANCE && (i >= cached.length || cached[i] == UnchangedToast.INSTANCE)) {
                return false;
            }
        }
        return true;
    }

    /** Whether rows of {@code r} are cached: it has a key, and a column whose values may be TOASTed. */
    private boolean cacheable(RelationInfo r) {
        return cacheable.computeIfAbsent(r, x -> {
            if (x.keyIndexes().length == 0) {
                return false;
            }
            for (ColumnInfo c : x.columns()) {
                if (!FIXED.contains(c.type().oid())) {
                    return true;
                }
            }
            return false;
        });
    }

    /** The key of {@code row} (a key column's unchanged value taken from {@code other}), or null when it is not known. */
    private static Key key(RelationInfo r, Object[] row, Object[] other) {
        if (row == null) {
            return null;
        }
        int[] idx = r.keyIndexes();
        Object[] k = new Object[idx.length];
        for (int j = 0; j < idx.length; j++) {
            Object v = idx[j] < row.length ? row[idx[j]] : null;
            if (v == UnchangedToast.INSTANCE && other != null && idx[j] < other.length) {
                v = other[idx[j]];
            }
            if (v == null || v == UnchangedToast.INSTANCE) {
                return null;
            }
            k[j] = v;
        }
        return new Key(r.oid(), k);
    }

    private void put(Key k, RelationInfo r, Object[] row) {
        if (k == null) {
            return;
        }
        batch.put(k, row);
        long cost = 64 + cost(row);
        if (cost > maxBytes) {
            remove(k);
            return;
        }
        Entry old = cache.put(k, new Entry(r, row, cost));
        bytes += cost - (old == null ? 0 : old.cost());
        // INV: BOUNDED — the least recently used rows leave the cache first
        Iterator<Entry> it = cache.values().iterator();
        while (bytes > maxBytes && it.hasNext()) {
            bytes -= it.next().cost();
            it.remove();
        }
    }

    private void remove(Key k) {
        if (k == null) {
            return;
        }
        batch.put(k, null);
        Entry old = cache.remove(k);
        if (old != null) {
            bytes -= old.cost();
        }
    }

    /** The estimated heap bytes of a row's values. */
    static long cost(Object[] row) {
        long n = 16L + 8L * row.length;
        for (Object v : row) {
            n += value(v);
        }
        return n;
    }

    private static long value(Object v) {
        if (v == null || v == UnchangedToast.INSTANCE) {
            return 0;
        }
        if (v instanceof String s) {
            return 48 + 2L * s.length();
        }
        if (v instanceof byte[] b) {
            return 24 + b.length;
        }
        if (v instanceof Object[] a) {
            return cost(a);
        }
        if (v instanceof java.util.Collection<?> c) {
            long n = 32;
            for (Object x : c) {
                n += 8 + value(x);
            }
            return n;
        }
        return 48;
    }

    /** Releases the lookup's connection; logs what was completed how. */
    void close() {
        lookup.close();
        if (fromOldRow + fromCache + fromSource + left > 0) {
            LOG.info("transforms.toast complete: unchanged TOAST values given from the old row {}, from the cache {}, read from the source {},"
                    + " left as the placeholder (row gone) {}", fromOldRow, fromCache, fromSource, left);
        }
    }

    /** Bytes the cache holds now (estimated). */
    long bytes() {
        return bytes;
    }
}
