package io.millrace.engine.transform;

import io.millrace.core.MillraceException;
import io.millrace.core.MillraceException.Kind;
import io.millrace.core.Secret;
import io.millrace.core.schema.ColumnInfo;
import io.millrace.core.schema.RelationInfo;
import io.millrace.core.schema.TableRef;
import io.millrace.core.sink.CopyableSink;
import io.millrace.core.sink.Sink;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The per-table transforms of a pipeline ({@code transforms:}): an immutable value, checked when built (from the YAML
 * section by the config loader, again on a reload) and against the captured tables' columns at each start
 * ({@link #check}). The engine applies it in one place every row passes through on its way to a destination — each
 * destination's {@link Sink#write} ({@link #wrap}) — so initial snapshot, online snapshots and the stream are
 * transformed alike and no destination receives a clear value. Row filters are applied by PostgreSQL (the
 * publication's row filter and the snapshot's WHERE; see {@link #filters()}).
 */
public final class Transforms {
    /** No transforms: destinations get every column of every row. */
    public static final Transforms NONE = new Transforms(List.of(), Secret.NONE);

    private final List<TableRule> rules;
    private final Secret salt;
    private final Toast toast;
    private final int toastCacheMb;

    /** {@code transforms.toast}: what a destination that keeps no rows gets for an unchanged TOASTed value. */
    public enum Toast {
        /** Debezium's placeholder, {@code __debezium_unavailable_value} (the default). */
        PLACEHOLDER,
        /** The value ({@link ToastCompleter}: the old row, a bounded cache, else the source's current row by key). */
        COMPLETE
    }

    /**
     * {@code transforms.toast_cache_mb} not set: the cache of rows of one destination may take 32 MB of heap, or a
     * sixteenth of the heap if less (12 MB at bin/millrace's -Xmx192m), beside the pipeline's memory budget.
     */
    public static final int DEFAULT_TOAST_CACHE_MB = 0;

    static long toastCacheBytes(int mb) {
        return mb > 0 ? (long) mb << 20 : Math.min(32L << 20, Runtime.getRuntime().maxMemory() / 16);
    }

    /**
     * @param rules the entries of {@code transforms.tables}, in order: a table takes the first whose {@code match} matches it
     * @param salt  the key of {@code hash} masks ({@code transforms.hash_salt_env} / {@code hash_salt_file}); required by them
     */
    public Transforms(List<TableRule> rules, Secret salt) {
        this(rules, salt, Toast.PLACEHOLDER, DEFAULT_TOAST_CACHE_MB);
    }

    /**
     * @param toast        {@code transforms.toast}
     * @param toastCacheMb {@code transforms.toast_cache_mb}, 1 or more, or {@link #DEFAULT_TOAST_CACHE_MB}
     */
    public Transforms(List<TableRule> rules, Secret salt, Toast toast, int toastCacheMb) {
        if (toastCacheMb < 0 || toastCacheMb > 1 << 16) {
            throw error("toast_cache_mb", "must be from 1 to " + (1 << 16) + ", got " + toastCacheMb);
        }
        this.toast = java.util.Objects.requireNonNull(toast, "toast");
        this.toastCacheMb = toastCacheMb;
        this.rules = List.copyOf(rules);
        this.salt = salt == null ? Secret.NONE : salt;
        for (TableRule r : this.rules) {
            validate(r);
        }
    }

    private void validate(TableRule r) {
        if (r.include() != null && !r.exclude().isEmpty()) {
            throw error(r.setting() + ".columns", "has both include and exclude: give one of them (include lists the only columns"
                    + " passed on, exclude the columns left out)");
        }
        if (r.include() != null && r.include().isEmpty()) {
            throw error(r.setting() + ".columns.include", "must name at least one column (or remove it to pass every column on)");
        }
        for (Map.Entry<String, Mask> m : r.masks().entrySet()) {
            if (!r.keeps(m.getKey())) {
                throw error(r.setting() + ".mask." + m.getKey(), "masks a column that columns." + (r.include() != null ? "include does not list"
                        : "exclude leaves out") + ": it reaches no destination anyway; remove the mask or keep the column");
            }
            if (m.getValue() instanceof Mask.Hash && salt.isEmpty()) {
                throw error(r.setting() + ".mask." + m.getKey(), "is hash, which needs a salt: set transforms.hash_salt_env (an environment"
                        + " variable holding it) or transforms.hash_salt_file (a file holding it); the salt is never written in the configuration");
            }
        }
        if (r.rename() != null) {
            String[] parts = r.rename().split("\\.", -1);
            String rest = r.rename().replace("{schema}", "").replace("{table}", "");
            if (parts.length != 2 || parts[0].isEmpty() || parts[1].isEmpty() || rest.contains("{") || rest.contains("}")
                    || rest.contains("\"")) {
                throw error(r.setting() + ".rename", "must be schema.table, where {schema} and {table} stand for the source table's"
                        + " (one dot, no quotes), e.g. \"mirror.{table}\" or \"{schema}.{table}_v2\"; got '" + r.rename() + "'");
            }
            String m = r.match().toString();
            boolean schemas = r.match().schema().matches(".*[*?].*"), tables = r.match().table().matches(".*[*?].*");
            if (tables && !r.rename().contains("{table}") || schemas && !r.rename().contains("{schema}")) {
                // INV: a rename is one-to-one — two tables under one name would mix rows (one key space) in every destination
                throw error(r.setting() + ".rename", "gives every table '" + m + "' matches the one name '" + r.rename() + "': their"
                        + " rows would mix in one destination table. Put {table} in the name (e.g. \"" + parts[0] + ".{table}\"; {schema} too when"
                        + " the schema is a pattern), or match one table");
            }
        }
        if (r.filter() != null && r.filter().contains(";")) {
            throw error(r.setting() + ".filter", "contains ';': write one SQL condition on the table's columns, e.g. \"region = 'eu'\"");
        }
    }

    static MillraceException error(String key, String message) {
        return new MillraceException(Kind.CONFIG, "config: " + (key.startsWith("transforms") ? key : "transforms." + key) + " " + message);
    }

    public Toast toast() {
        return toast;
    }

    public int toastCacheMb() {
        return toastCacheMb;
    }

    /**
     * With {@code toast: complete}, gives {@code sink} (made by {@link #wrap}) unchanged TOASTed values filled in before its
     * transforms, reading the rows it misses through a lookup {@code lookups} makes, when the destination keeps no rows of
     * its own (not a {@link io.millrace.core.sink.KeyedSink}: Kafka, jsonl; postgres and DuckDB keep the value they hold).
     * Returns whether it does.
     */
    public boolean completeToast(Sink sink, java.util.function.Supplier<ToastLookup> lookups) {
        if (toast != Toast.COMPLETE || !(sink instanceof TransformingSink t) || t.wrapped() instanceof io.millrace.core.sink.KeyedSink) {
            return false;
        }
        t.completer(new ToastCompleter(toastCacheBytes(toastCacheMb), lookups.get()));
        return true;
    }

    public List<TableRule> rules() {
        return rules;
    }

    public boolean isEmpty() {
        return rules.isEmpty();
    }

    Secret salt() {
        return salt;
    }

    /** The rule for {@code table}: the first that matches it, or null. */
    public TableRule forTable(TableRef table) {
        for (TableRule r : rules) {
            if (TableRef.matches(r.match(), table)) {
                return r;
            }
        }
        return null;
    }

    /** The row filter of each of {@code tables} that has one, in their order. */
    public Map<TableRef, String> filters(List<TableRef> tables) {
        Map<TableRef, String> out = new LinkedHashMap<>();
        for (TableRef t : tables) {
            TableRule r = forTable(t);
            if (r != null && r.filter() != null) {
                out.put(t, r.filter());
            }
        }
        return out;
    }

    /**
     * Checks the rules against the captured tables' shapes (as the catalog gives them, key flags on the primary key or
     * replica identity index): every column a rule names exists, no key column is left out, and a key column is masked
     * only by {@code hash} — redact or truncate would give rows of different keys one key, and a destination keyed on it
     * would merge them; a hash keeps keys apart and the same key the same. A plain table name that matches no captured
     * table is an error too (a pattern may match none).
     *
     * @throws MillraceException of kind CONFIG naming the setting, the table and the column, and the fix
     */
    public void check(List<RelationInfo> tables) {
        for (TableRule r : rules) {
            if (!r.match().isPattern() && tables.stream().noneMatch(t -> t.table().equals(r.match()))) {
                throw error(r.setting() + ".match", "names " + r.match() + ", which is not a captured table (source.tables): fix the name"
                        + " or capture the table");
            }
        }
        Map<TableRef, TableRef> named = new java.util.HashMap<>();
        for (RelationInfo t : tables) {
            TableRule r = forTable(t.table());
            if (r != null) {
                check(r, t);
            }
            TableRef to = r == null ? t.table() : r.destinationName(t.table());
            TableRef other = named.putIfAbsent(to, t.table());
            if (other != null) { // INV: a rename is one-to-one (TransformingSink refuses it too, for tables joining later)
                TableRule by = r != null && r.rename() != null ? r : forTable(other);
                throw error(by.setting() + ".rename", "gives tables " + other + " and " + t.table() + " one name in the destinations, " + to
                        + ": their rows would mix in one table. Give each table a name of its own");
            }
        }
    }

    private static void check(TableRule r, RelationInfo t) {
        List<String> names = t.columns().stream().map(ColumnInfo::name).toList();
        List<String> named = new ArrayList<>(r.include() != null ? r.include() : r.exclude());
        named.addAll(r.masks().keySet());
        for (String c : named) {
            if (!names.contains(c)) {
                throw error(r.setting(), "names column '" + c + "', which table " + t.table() + " does not have (its columns: "
                        + String.join(", ", names) + "): fix the column name, or narrow " + r.setting() + ".match");
            }
        }
        for (ColumnInfo c : t.columns()) {
            if (!c.key()) {
                continue;
            }
            if (!r.keeps(c.name())) {
                throw error(r.setting() + ".columns", "leaves out key column '" + c.name() + "' of table " + t.table() + ": destinations"
                        + " key rows by it (updates and deletes find their row by it). Keep it, or mask it with hash");
            }
            Mask m = r.masks().get(c.name());
            if (m != null && !(m instanceof Mask.Hash)) {
                throw error(r.setting() + ".mask." + c.name(), "is " + m.spelling() + " on key column '" + c.name() + "' of table "
                        + t.table() + ": different keys would become one and a destination would merge their rows. Use hash"
                        + " (the same key gives the same hash), or mask another column");
            }
        }
    }

    /**
     * {@code sink} as the engine uses it: every event it is given transformed first. Wrapped also without rules (a batch
     * then passes as it is), so that a reload can give it transforms ({@link #replace}).
     */
    public Sink wrap(Sink sink) {
        return sink instanceof CopyableSink c ? new TransformingSink.Copyable(c, this) : new TransformingSink(sink, this);
    }

    /**
     * Gives a sink {@link #wrap} made {@code next} as its transforms from its next write on (a configuration reload;
     * checked by the caller with {@link #check} first). Any thread. Returns false when {@code sink} was not wrapped.
     * The row filters are the publication's and the snapshots': a changed filter needs them changed too.
     */
    public static boolean replace(Sink sink, Transforms next) {
        if (sink instanceof TransformingSink t) {
            t.replace(java.util.Objects.requireNonNull(next, "next"));
            return true;
        }
        return false;
    }

    /**
     * The same rules and salt: a configuration read again with unchanged transforms equals the running one (a reload of
     * the table selection compares every other setting; ReloadIT).
     */
    /** The keyed destination {@code sink} wraps ({@link #wrap}), or null when it is not keyed. */
    public static io.millrace.core.sink.KeyedSink keyed(Sink sink) {
        Sink s = sink instanceof TransformingSink t ? t.wrapped() : sink;
        return s instanceof io.millrace.core.sink.KeyedSink k ? k : null;
    }

    /**
     * The keyed destination {@code sink} wraps when it holds the rows of {@code table} under the source's own keys (no mask
     * on {@code keyColumns}), so its keys compare with the source's; else null.
     */
    public io.millrace.core.sink.KeyedSink keysAsTheSourceHas(Sink sink, TableRef table, List<String> keyColumns) {
        TableRule r = forTable(table);
        return r != null && keyColumns.stream().anyMatch(k -> r.masks().containsKey(k)) ? null : keyed(sink);
    }

    /** Whether a rule renames tables: the destinations then hold some under other names than the source's. */
    boolean renames() {
        return rules.stream().anyMatch(r -> r.rename() != null);
    }

    /**
     * The source table a destination holds as {@code name} by a rule's {@code rename}, or null when no rule gives that name
     * (the destination holds it under its own name, or under one an earlier configuration gave it). Checked both ways: the
     * table found must be one the rule matches and the rule must give it {@code name}.
     */
    TableRef sourceName(TableRef name) {
        for (TableRule r : rules) {
            if (r.rename() == null) {
                continue;
            }
            java.util.regex.Matcher m = template(r.rename()).matcher(name.schema() + "." + name.table());
            if (!m.matches()) {
                continue;
            }
            String schema = r.rename().contains("{schema}") ? m.group("s") : literal(r.match().schema());
            String table = r.rename().contains("{table}") ? m.group("t") : literal(r.match().table());
            if (schema == null || table == null) {
                continue;
            }
            TableRef t = new TableRef(schema, table);
            if (forTable(t) == r && r.destinationName(t).equals(name)) {
                return t;
            }
        }
        return null;
    }

    /** {@code name} when it is no pattern, else null. */
    private static String literal(String name) {
        return name.contains("*") || name.contains("?") ? null : name;
    }

    private static java.util.regex.Pattern template(String rename) {
        StringBuilder re = new StringBuilder();
        boolean s = false;
        boolean t = false;
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("\\{schema}|\\{table}").matcher(rename);
        int at = 0;
        while (m.find()) {
            re.append(java.util.regex.Pattern.quote(rename.substring(at, m.start())));
            if (m.group().equals("{schema}")) {
                re.append(s ? "\\k<s>" : "(?<s>[^.]+)");
                s = true;
            } else {
                re.append(t ? "\\k<t>" : "(?<t>[^.]+)");
                t = true;
            }
            at = m.end();
        }
        re.append(java.util.regex.Pattern.quote(rename.substring(at)));
        return java.util.regex.Pattern.compile(re.toString());
    }

    /** The name the destinations hold {@code table} under: its own, or the one its rule's {@code rename} gives it. */
    public TableRef destinationName(TableRef table) {
        TableRule r = forTable(table);
        return r == null ? table : r.destinationName(table);
    }

    /**
     * The first key column of {@code table} whose mask differs between {@code a} and {@code b} (a hash mask under
     * another salt included), or null: a reload may not change it, since the destinations' keys would change.
     */
    public static String keyMaskChanged(Transforms a, Transforms b, io.millrace.core.schema.RelationInfo table) {
        TableRule ra = a.forTable(table.table());
        TableRule rb = b.forTable(table.table());
        for (int i : table.keyIndexes()) {
            String k = table.column(i).name();
            Mask ma = ra == null ? null : ra.masks().get(k);
            Mask mb = rb == null ? null : rb.masks().get(k);
            if (!java.util.Objects.equals(ma, mb) || (ma != null && !a.salt.equals(b.salt))) {
                return k;
            }
        }
        return null;
    }

    /**
     * How {@code table} reaches the destinations under these transforms, as 16 hex digits (64-bit FNV-1a): its rule's
     * columns, masks, row filter and rename, and the salt where a mask hashes (an HMAC of a constant under it: a
     * checkpoint never holds the salt). Equal for two transforms where {@link #sameRule} holds, and different (but for a
     * hash collision) where it does not. Recorded with each table in the destinations' checkpoints
     * ({@link io.millrace.core.change.Checkpoint#rules}), so that a start sees a rule changed while Millrace was stopped.
     */
    public String fingerprint(TableRef table) {
        TableRule r = forTable(table);
        StringBuilder b = new StringBuilder();
        if (r != null) {
            b.append("include=").append(r.include()).append("\0exclude=").append(r.exclude()).append("\0masks=");
            new java.util.TreeMap<>(r.masks()).forEach((column, m) -> b.append(column).append('=').append(m.spelling()).append(',')); // as sameRule: order aside
            b.append("\0filter=").append(r.filter()).append("\0rename=").append(r.rename());
            if (r.masks().values().stream().anyMatch(m -> m instanceof Mask.Hash) && !salt.isEmpty()) {
                b.append("\0salt=").append(saltMark());
            }
        }
        return String.format("%016x", fnv(b.toString())) + masksMark(r);
    }

    /**
     * The masks part of a {@link #fingerprint}: {@code /} then, for each masked column in name order, 8 hex digits of
     * its name, {@code :} and 8 hex digits of its mask (with the salt's mark where it hashes), comma-separated; none for
     * a rule that masks nothing. It tells a start which key column was masked, and how, when the rule changed while
     * Millrace was stopped (a key mask taken away or changed: {@link #keyMaskChanged(String, String,
     * io.millrace.core.schema.RelationInfo)}); a stamp without it masked nothing, or is of the release before (unknown).
     */
    private String masksMark(TableRule r) {
        if (r == null || r.masks().isEmpty()) {
            return ""; // as the release before stamped it: going back to it does not take every table for one whose rule changed
        }
        StringBuilder b = new StringBuilder("/");
        new java.util.TreeMap<>(r.masks()).forEach((column, m) -> b.append(b.length() > 1 ? "," : "").append(nameMark(column))
                .append(':').append(String.format("%08x", fnv(m.spelling() + (m instanceof Mask.Hash && !salt.isEmpty()
                        ? "\0" + saltMark() : "")) & 0xffffffffL)));
        return b.toString();
    }

    /** 8 hex digits of a column's name, as a {@link #fingerprint}'s masks part names it. */
    public static String nameMark(String column) {
        return String.format("%08x", fnv(column) & 0xffffffffL);
    }

    private static long fnv(String s) {
        long h = 0xcbf29ce484222325L; // 64-bit FNV-1a
        for (byte x : s.getBytes(java.nio.charset.StandardCharsets.UTF_8)) {
            h = (h ^ (x & 0xff)) * 0x100000001b3L;
        }
        return h;
    }

    /**
     * Whether two {@link #fingerprint}s (as recorded in checkpoints) are of the same rule: their first part, so that a
     * stamp of the release before, which has no masks part, matches today's of the same rule.
     */
    public static boolean sameStamp(String a, String b) {
        return a != null && b != null && head(a).equals(head(b));
    }

    /**
     * Whether a {@link #fingerprint} tells what its rule masked: it has a masks part. One without is of a rule that masks
     * nothing, or a stamp of the release before (unknown).
     */
    public static boolean tellsMasks(String stamp) {
        return stamp.indexOf('/') >= 0;
    }

    private static String head(String stamp) {
        int slash = stamp.indexOf('/');
        return slash < 0 ? stamp : stamp.substring(0, slash);
    }

    /**
     * The first key column of {@code table} masked otherwise under the rule stamped {@code now} than under the one
     * stamped {@code was} (a mask added, taken away, or changed, or its hash's salt), or null where they agree; null
     * too where {@code was} has no masks part (a stamp of the release before: what it masked is unknown).
     */
    public static String keyMaskChanged(String was, String now, io.millrace.core.schema.RelationInfo table) {
        if (was == null || now == null || !tellsMasks(was)) {
            return null;
        }
        Map<String, String> before = marks(was);
        Map<String, String> after = marks(now);
        for (int i : table.keyIndexes()) {
            String name = nameMark(table.column(i).name());
            if (!java.util.Objects.equals(before.get(name), after.get(name))) {
                return table.column(i).name();
            }
        }
        return null;
    }

    /** A stamp's masks part: each masked column's name mark to its mask's mark. */
    private static Map<String, String> marks(String stamp) {
        Map<String, String> marks = new java.util.HashMap<>();
        String part = stamp.substring(stamp.indexOf('/') + 1);
        for (String m : part.isEmpty() ? new String[0] : part.split(",")) {
            int colon = m.indexOf(':');
            if (colon > 0) {
                marks.put(m.substring(0, colon), m.substring(colon + 1));
            }
        }
        return marks;
    }

    /** An HMAC of a constant under the salt: tells salts apart without revealing one. */
    private String saltMark() {
        try {
            javax.crypto.Mac mac = javax.crypto.Mac.getInstance("HmacSHA256");
            mac.init(new javax.crypto.spec.SecretKeySpec(salt.reveal().getBytes(java.nio.charset.StandardCharsets.UTF_8), "HmacSHA256"));
            return java.util.HexFormat.of().formatHex(mac.doFinal("millrace: the rules a table was written under"
                    .getBytes(java.nio.charset.StandardCharsets.UTF_8)));
        } catch (java.security.GeneralSecurityException e) {
            throw new IllegalStateException("HmacSHA256 is not available in this JVM", e);
        }
    }

    /**
     * Whether {@code table} reaches the destinations the same under {@code a} and {@code b}: the same columns, masks and
     * row filter (wherever the rule stands in the list), and the same salt when a mask hashes.
     */
    public static boolean sameRule(Transforms a, Transforms b, TableRef table) {
        TableRule ra = a.forTable(table);
        TableRule rb = b.forTable(table);
        if (ra == null || rb == null) {
            return ra == rb;
        }
        boolean hashes = ra.masks().values().stream().anyMatch(m -> m instanceof Mask.Hash);
        return java.util.Objects.equals(ra.include(), rb.include()) && ra.exclude().equals(rb.exclude()) && ra.masks().equals(rb.masks())
                && java.util.Objects.equals(ra.filter(), rb.filter()) && java.util.Objects.equals(ra.rename(), rb.rename())
                && (!hashes || a.salt.equals(b.salt));
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Transforms t && rules.equals(t.rules) && salt.equals(t.salt) && toast == t.toast && toastCacheMb == t.toastCacheMb;
    }

    @Override
    public int hashCode() {
        return rules.hashCode();
    }

    @Override
    public String toString() {
        return "Transforms" + rules; // the salt is a Secret: never printed
    }
}
