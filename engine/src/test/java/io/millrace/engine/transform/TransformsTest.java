package io.millrace.engine.transform;

import io.millrace.core.Lsn;
import io.millrace.core.MillraceException;
import io.millrace.core.Position;
import io.millrace.core.change.ChangeEvent;
import io.millrace.core.change.Checkpoint;
import io.millrace.core.change.Op;
import io.millrace.core.schema.ColumnInfo;
import io.millrace.core.schema.RelationInfo;
import io.millrace.core.schema.TableRef;
import io.millrace.core.schema.TypeResolver;
import io.millrace.core.sink.Sink;
import io.millrace.core.types.Codecs;
import io.millrace.core.types.UnchangedToast;
import io.millrace.engine.config.ConfigLoader;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

/** The {@code transforms:} section read and checked, and what a destination behind them is given. */
class TransformsTest {
    private static final String SALT = "pepper-0123456789";
    private static final Map<String, String> ENV = Map.of("SALT", SALT);
    @TempDir
    Path dir;

    private Transforms parse(String section) {
        return new ConfigLoader(ENV::get).transforms("transforms:\n" + section, dir);
    }

    private String fail(String section) {
        MillraceException e = catchThrowableOfType(MillraceException.class, () -> parse(section));
        assertThat(e).as("an error for:\n" + section).isNotNull();
        assertThat(e.kind()).isEqualTo(MillraceException.Kind.CONFIG);
        return e.getMessage();
    }

    private static RelationInfo customers() {
        return new RelationInfo(42, new TableRef("public", "customers"), 'd', List.of(
                new ColumnInfo("id", Codecs.builtin(23), -1, true),
                new ColumnInfo("email", Codecs.builtin(25), -1, false),
                new ColumnInfo("ssn", Codecs.builtin(25), -1, false),
                new ColumnInfo("phone", Codecs.builtin(25), -1, false),
                new ColumnInfo("notes", Codecs.builtin(25), -1, false),
                new ColumnInfo("born", Codecs.builtin(1082), -1, false)), TypeResolver.builtinsOnly());
    }

    private static final String RULE = """
              hash_salt_env: SALT
              tables:
                - match: public.customers
                  columns: {exclude: [notes]}
                  mask: {email: hash, ssn: redact, phone: truncate(3), born: hash}
            """;

    @Test
    void toastSettingsAreReadAndCheckedWithTheSettingNamed() {
        assertThat(parse("  toast: complete\n  toast_cache_mb: 8\n").toast()).isEqualTo(Transforms.Toast.COMPLETE);
        assertThat(parse("  toast: complete\n  toast_cache_mb: 8\n").toastCacheMb()).isEqualTo(8);
        assertThat(parse("  tables: []\n").toast()).isEqualTo(Transforms.Toast.PLACEHOLDER);
        assertThat(parse("  toast: complete\n")).isNotEqualTo(parse("  toast: placeholder\n"));
        assertThat(fail("  toast: full\n")).contains("transforms.toast").contains("placeholder, complete").contains("'full'");
        assertThat(fail("  toast: complete\n  toast_cache_mb: 0\n")).contains("transforms.toast_cache_mb").contains("from 1 to");
    }

    @Test
    void theToastCacheStaysWithinItsBoundAndFollowsKeyChangesAndDeletes() {
        RelationInfo r = customers();
        java.util.List<java.util.List<Object[]>> asked = new java.util.ArrayList<>();
        ToastCompleter c = new ToastCompleter(64 * 1024, (rel, keys) -> {
            asked.add(keys);
            return keys.stream().map(k -> (Object[]) null).toList(); // the source has none of them
        });
        Object u = io.millrace.core.types.UnchangedToast.INSTANCE;
        java.util.List<io.millrace.core.change.ChangeEvent> rows = new java.util.ArrayList<>();
        for (int i = 0; i < 200; i++) {
            rows.add(event(io.millrace.core.change.Op.READ, r, null, new Object[] {i, "e" + i, "s", "p", "x".repeat(1000), null}));
        }
        c.complete(rows);
        assertThat(c.bytes()).as("INV: BOUNDED").isLessThanOrEqualTo(64 * 1024).isPositive();
        var out = c.complete(java.util.List.of(
                event(io.millrace.core.change.Op.UPDATE, r, null, new Object[] {199, "e", "s", "p", u, null}),
                event(io.millrace.core.change.Op.UPDATE, r, new Object[] {199, null, null, null, null, null},
                        new Object[] {500, "e", "s", "p", u, null}),
                event(io.millrace.core.change.Op.UPDATE, r, null, new Object[] {500, "f", "s", "p", u, null}),
                event(io.millrace.core.change.Op.DELETE, r, new Object[] {500, null, null, null, null, null}, null),
                event(io.millrace.core.change.Op.UPDATE, r, null, new Object[] {0, "e", "s", "p", u, null})));
        assertThat(out.get(0).after()[4]).as("from the cache").isEqualTo("x".repeat(1000));
        assertThat(out.get(1).after()[4]).as("the key changed: the old key's value").isEqualTo("x".repeat(1000));
        assertThat(out.get(2).after()[4]).as("the new key holds it now").isEqualTo("x".repeat(1000));
        assertThat(out.get(4).after()[4]).as("pushed out of the cache, and the source has no such row").isSameAs(u);
        assertThat(asked).hasSize(1);
        assertThat(asked.get(0)).hasSize(1).allSatisfy(k -> assertThat(k).containsExactly(0));
        assertThat(c.counts()).containsExactly(0L, 3L, 0L, 1L);
    }

    private static io.millrace.core.change.ChangeEvent event(io.millrace.core.change.Op op, RelationInfo r, Object[] before, Object[] after) {
        return new io.millrace.core.change.ChangeEvent(op, r, before, after, io.millrace.core.Lsn.ZERO,
                io.millrace.core.Position.START, 1, 0, op == io.millrace.core.change.Op.READ);
    }

    @Test
    void badSectionsNameTheSettingAndTheFix() {
        assertThat(fail("  tables: [{match: public.c, colums: {exclude: [a]}}]\n")).contains("transforms.tables[0].colums").contains("columns");
        assertThat(fail("  tables: [{match: public.c, columns: {include: [a], exclude: [b]}}]\n"))
                .contains("transforms.tables[0].columns").contains("both include and exclude");
        assertThat(fail("  tables: [{match: public.c, mask: {a: scramble}}]\n")).contains("transforms.tables[0].mask.a")
                .contains("redact, hash, truncate(N)").contains("java(name)");
        assertThat(fail("  tables: [{match: public.c, mask: {a: hash}}]\n")).contains("transforms.tables[0].mask.a")
                .contains("transforms.hash_salt_env");
        assertThat(fail("  hash_salt: abc\n  tables: []\n")).contains("transforms.hash_salt").contains("must not be written");
        assertThat(fail("  tables: [{match: public.c, columns: {exclude: [a]}, mask: {a: redact}}]\n"))
                .contains("transforms.tables[0].mask.a").contains("exclude leaves out");
        assertThat(fail("  tables: [{match: public.c, filter: \"a = 1; DROP TABLE x\"}]\n")).contains("transforms.tables[0].filter");
        assertThat(fail("  tables: [{columns: {exclude: [a]}}]\n")).contains("transforms.tables[0].match").contains("is required");
        assertThat(fail("  hash_salt_env: NOT_SET\n  tables: []\n")).contains("NOT_SET").doesNotContain(SALT);
    }

    @Test
    void columnsAndKeysAreCheckedAgainstTheTable() {
        List<RelationInfo> tables = List.of(customers());
        parse(RULE).check(tables);
        String missing = catchThrowableOfType(MillraceException.class, () -> parse("""
                  tables: [{match: public.customers, mask: {mail: redact}}]
                """).check(tables)).getMessage();
        assertThat(missing).contains("transforms.tables[0]").contains("'mail'").contains("public.customers").contains("email");
        assertThat(catchThrowableOfType(MillraceException.class, () -> parse("""
                  tables: [{match: public.customers, mask: {id: redact}}]
                """).check(tables)).getMessage()).contains("transforms.tables[0].mask.id").contains("key column").contains("Use hash");
        assertThat(catchThrowableOfType(MillraceException.class, () -> parse("""
                  tables: [{match: public.customers, columns: {include: [email]}}]
                """).check(tables)).getMessage()).contains("leaves out key column 'id'");
        assertThat(catchThrowableOfType(MillraceException.class, () -> parse("""
                  tables: [{match: public.other, columns: {exclude: [x]}}]
                """).check(tables)).getMessage()).contains("transforms.tables[0].match").contains("not a captured table");
        parse("  hash_salt_env: SALT\n  tables: [{match: public.customers, mask: {id: hash}}]\n").check(tables);
    }

    /** Records what the destination is given. */
    private static class Recording implements Sink {
        final List<ChangeEvent> got = new ArrayList<>();
        final List<Checkpoint> checkpoints = new ArrayList<>();

        @Override
        public String name() {
            return "rec";
        }

        @Override
        public boolean transactional() {
            return true;
        }

        @Override
        public Optional<Checkpoint> open() {
            return Optional.empty();
        }

        @Override
        public void write(List<ChangeEvent> events, Checkpoint checkpoint) {
            got.addAll(events);
            checkpoints.add(checkpoint);
        }

        @Override
        public void close() {
        }
    }

    private static String hmac(String s) throws Exception {
        Mac mac = Mac.getInstance("HmacSHA256");
        mac.init(new SecretKeySpec(SALT.getBytes(StandardCharsets.UTF_8), "HmacSHA256"));
        return HexFormat.of().formatHex(mac.doFinal(s.getBytes(StandardCharsets.UTF_8)));
    }

    @Test
    void aDestinationGetsTheMaskedProjection() throws Exception {
        Recording rec = new Recording();
        Sink sink = parse(RULE).wrap(rec);
        RelationInfo r = customers();
        RelationInfo other = new RelationInfo(43, new TableRef("public", "other"), 'd', List.of(new ColumnInfo("id", Codecs.builtin(23), -1, true)),
                TypeResolver.builtinsOnly());
        Object[] row = {7, "ann@example.com", "123-45-6789", "5551234", "secret note", java.time.LocalDate.of(1990, 1, 2)};
        Object[] later = {7, "ann@example.com", UnchangedToast.INSTANCE, null, "x", java.time.LocalDate.of(1990, 1, 2)};
        ChangeEvent otherRow = new ChangeEvent(Op.CREATE, other, null, new Object[]{1}, Lsn.ZERO, Position.START, 1, 0, false);
        sink.write(List.of(otherRow, new ChangeEvent(Op.READ, r, null, row, Lsn.ZERO, Position.START, 0, 0, true),
                new ChangeEvent(Op.UPDATE, r, row, later, Lsn.ZERO, Position.START, 1, 0, false)), null);

        assertThat(rec.got.get(0)).as("a table without a rule passes unchanged").isSameAs(otherRow);
        RelationInfo out = rec.got.get(1).relation();
        assertThat(out.columns().stream().map(ColumnInfo::name)).containsExactly("id", "email", "ssn", "phone", "born");
        assertThat(out.column(1).type().name()).as("masked columns are text").isEqualTo("text");
        assertThat(out.column(4).type().name()).isEqualTo("text");
        assertThat(out.column(0).type().name()).isEqualTo("int4");
        assertThat(out.keyIndexes()).containsExactly(0);
        assertThat(rec.got.get(1).after()).containsExactly(7, hmac("ann@example.com"), "[redacted]", "555", hmac("1990-01-02"));
        assertThat(rec.got.get(2).before()).containsExactly(7, hmac("ann@example.com"), "[redacted]", "555", hmac("1990-01-02"));
        assertThat(rec.got.get(2).after()).as("NULL and an unchanged TOAST value stay so")
                .containsExactly(7, hmac("ann@example.com"), UnchangedToast.INSTANCE, null, hmac("1990-01-02"));
        assertThat(rec.got.get(2).relation()).as("one projection per shape").isSameAs(out);
        assertThat(parse(RULE).toString()).doesNotContain(SALT);
    }

    /** A Transform of the user's, found with ServiceLoader by its name, masks a column; its failure never shows the value. */
    @Test
    void aJavaTransformFromTheClassPathMasksAColumn() {
        assertThat(fail("  tables: [{match: public.customers, mask: {email: java(nope)}}]\n")).contains("transforms.tables[0].mask.email")
                .contains("no Transform named 'nope'").contains("reverse");
        Transforms t = parse("  tables: [{match: public.customers, mask: {email: java(reverse)}}]\n");
        t.check(List.of(customers()));
        assertThat(catchThrowableOfType(MillraceException.class, () -> parse("  tables: [{match: public.customers, mask: {id: java(reverse)}}]\n")
                .check(List.of(customers()))).getMessage()).contains("key column").contains("Use hash");
        Recording rec = new Recording();
        Sink sink = t.wrap(rec);
        RelationInfo r = customers();
        sink.write(List.of(new ChangeEvent(Op.CREATE, r, null, new Object[]{1, "abc", null, null, null, null}, Lsn.ZERO, Position.START, 1, 0,
                false)), null);
        assertThat(rec.got.get(0).after()[1]).isEqualTo("email:cba");
        assertThat(rec.got.get(0).relation().column(1).type().name()).isEqualTo("text");
        MillraceException e = catchThrowableOfType(MillraceException.class, () -> sink.write(List.of(new ChangeEvent(Op.CREATE, r, null,
                new Object[]{2, "boom", null, null, null, null}, Lsn.ZERO, Position.START, 1, 0, false)), null));
        assertThat(e.getMessage()).contains("java(reverse)").contains("'email'").contains("public.customers").doesNotContain("boom");
        assertThat(e.getCause()).isNull();
    }

    /** A reload's transforms take effect at the sink's next write; a sink wrapped without rules passes events as they are. */
    @Test
    void replacedTransformsApplyFromTheNextWrite() {
        Recording rec = new Recording();
        Sink sink = Transforms.NONE.wrap(rec);
        RelationInfo r = customers();
        ChangeEvent e = new ChangeEvent(Op.CREATE, r, null, new Object[]{1, "a@b", "s", "p", "n", null}, Lsn.ZERO, Position.START, 1, 0, false);
        sink.write(List.of(e), null);
        assertThat(rec.got.get(0)).isSameAs(e);
        assertThat(Transforms.replace(sink, parse("  tables: [{match: public.customers, mask: {ssn: redact}}]\n"))).isTrue();
        sink.write(List.of(e), null);
        assertThat(rec.got.get(1).after()[2]).isEqualTo("[redacted]");
        assertThat(Transforms.replace(rec, Transforms.NONE)).as("not wrapped").isFalse();
    }

    /**
     * The rule each held table is written under goes into the checkpoint ({@code Checkpoint.rules}): a start compares it
     * with today's. A reload that changes a table's rule keeps the old one recorded until a checkpoint carries the
     * table's reconciling copy (INV: RESUME): a crash between the two leaves the table recorded under the old rule, so
     * the start copies it again, instead of recording rows the old rule wrote as written under the new one.
     */
    @Test
    void theRuleEachTableIsWrittenUnderIsRecordedAndAReloadRecordsItsRuleOnlyWithTheCopy() {
        Transforms masked = parse("  tables: [{match: public.customers, mask: {ssn: redact}}]\n");
        Transforms other = parse("  tables: [{match: public.other, mask: {ssn: redact}}]\n");
        TableRef customers = new TableRef("public", "customers");
        assertThat(masked.fingerprint(customers)).matches("[0-9a-f]{16}/[0-9a-f]{8}:[0-9a-f]{8}").isNotEqualTo(Transforms.NONE.fingerprint(customers))
                .isEqualTo(parse("  tables: [{match: public.customers, mask: {ssn: redact}}]\n").fingerprint(customers));
        assertThat(other.fingerprint(customers)).as("another table's rule").isEqualTo(Transforms.NONE.fingerprint(customers));
        assertThat(parse(RULE).fingerprint(customers)).as("a hash mask: the salt counts")
                .isNotEqualTo(new ConfigLoader(Map.of("SALT", "another salt")::get).transforms("transforms:\n" + RULE, dir).fingerprint(customers));

        Recording rec = new Recording();
        Sink sink = Transforms.NONE.wrap(rec);
        sink.open();
        Checkpoint cp = new Checkpoint(Checkpoint.VERSION, new io.millrace.core.change.Identity("1", "d", "s", "p", "rec"), Lsn.of(0x10),
                Position.START, io.millrace.core.change.SnapshotProgress.skipped(Lsn.of(0x10)))
                .withTables(new java.util.TreeMap<>(Map.of(42, customers)));
        sink.write(List.of(), cp);
        assertThat(rec.checkpoints.get(0).rules()).containsExactly(Map.entry(42, Transforms.NONE.fingerprint(customers)));

        Transforms.replace(sink, masked);
        sink.write(List.of(), cp);
        assertThat(rec.checkpoints.get(1).rules()).as("no copy recorded yet: the old rule stays")
                .containsExactly(Map.entry(42, Transforms.NONE.fingerprint(customers)));
        Checkpoint copying = cp.withOnline(List.of(io.millrace.core.change.OnlineTask.reconciling(customers())));
        ChangeEvent copied = new ChangeEvent(Op.READ, customers(), null, new Object[]{1, "a@b", "s", "p", "n", null}, Lsn.ZERO,
                Position.START, 0, 0, true);
        sink.write(List.of(copied), copying);
        assertThat(rec.checkpoints.get(2).rules()).as("the copy's rows, under the new rule").containsExactly(Map.entry(42,
                masked.fingerprint(customers)));
        sink.write(List.of(), cp);
        assertThat(rec.checkpoints.get(3).rules()).as("the copy landed").containsExactly(Map.entry(42, masked.fingerprint(customers)));

        // a reload while a reconciling copy is half done (it ran under the rules before): only a copy begun again counts
        Transforms other2 = parse("  tables: [{match: public.customers, mask: {ssn: truncate(2)}}]\n");
        Checkpoint halfDone = cp.withOnline(List.of(new io.millrace.core.change.OnlineTask(TableRef.parse("public.customers"), null,
                List.of(io.millrace.core.change.OnlineTask.KeyRange.stored(List.of("500"), null)), 500, 42, true)));
        Transforms.replace(sink, other2);
        sink.write(List.of(), halfDone);
        assertThat(rec.checkpoints.get(4).rules()).as("the copy under way is the old rules'").containsExactly(Map.entry(42,
                masked.fingerprint(customers)));
        sink.write(List.of(copied), copying);
        assertThat(rec.checkpoints.get(5).rules()).as("a copy begun again").containsExactly(Map.entry(42, other2.fingerprint(customers)));
    }

    /**
     * A rule's stamp says which columns it masks, and how, so that a start sees a key column's mask taken away or changed
     * while stopped (the copy would put every row there twice), and lets pass a change that leaves the key's mask alone.
     * A stamp of the release before (no masks part) is the same rule as today's with the same first part.
     */
    @Test
    void aStampTellsWhetherTheKeyColumnsMaskChanged() {
        RelationInfo r = customers();
        TableRef t = r.table();
        String hashedKey = parse("  hash_salt_env: SALT\n  tables: [{match: public.customers, mask: {id: hash}}]\n").fingerprint(t);
        String hashedKeyAndEmail = parse("  hash_salt_env: SALT\n  tables: [{match: public.customers, mask: {id: hash, email: redact}}]\n")
                .fingerprint(t);
        String otherSalt = new ConfigLoader(Map.of("SALT", "another salt")::get).transforms("transforms:\n  hash_salt_env: SALT\n"
                + "  tables: [{match: public.customers, mask: {id: hash}}]\n", dir).fingerprint(t);
        String emailOnly = parse("  tables: [{match: public.customers, mask: {email: redact}}]\n").fingerprint(t);
        assertThat(Transforms.keyMaskChanged(hashedKey, Transforms.NONE.fingerprint(t), r)).as("taken away").isEqualTo("id");
        assertThat(Transforms.keyMaskChanged(hashedKey, emailOnly, r)).as("taken away, another added").isEqualTo("id");
        assertThat(Transforms.keyMaskChanged(hashedKey, otherSalt, r)).as("the salt changed").isEqualTo("id");
        assertThat(Transforms.keyMaskChanged(emailOnly, hashedKey, r)).as("added").isEqualTo("id");
        assertThat(Transforms.keyMaskChanged(hashedKey, hashedKeyAndEmail, r)).as("another column's mask added").isNull();
        String before = hashedKey.substring(0, hashedKey.indexOf('/'));
        assertThat(Transforms.keyMaskChanged(before, emailOnly, r)).as("a stamp of the release before: unknown").isNull();
        assertThat(Transforms.sameStamp(before, hashedKey)).isTrue();
        assertThat(Transforms.sameStamp(before, hashedKeyAndEmail)).isFalse();
    }

    /**
     * A table renamed while Millrace was stopped, its rule changed to match the new name as the old one did: the start's
     * first write keeps the rule recorded (not the one the stale name in the checkpoint matches now, another rule's: a
     * user's fixed rule was then refused at every start), and the stream's events under the new name keep it too.
     */
    @Test
    void aTableRenamedWhileStoppedKeepsItsRuleThroughTheStaleNameOfItsCheckpoint() {
        Transforms fixed = parse("  tables: [{match: public.clients, mask: {ssn: redact}}, {match: public.*}]\n");
        Transforms before = parse("  tables: [{match: public.customers, mask: {ssn: redact}}, {match: public.*}]\n");
        TableRef old = new TableRef("public", "customers");
        TableRef now = new TableRef("public", "clients");
        Checkpoint recorded = new Checkpoint(Checkpoint.VERSION, new io.millrace.core.change.Identity("1", "d", "s", "p", "rec"),
                Lsn.of(0x10), Position.START, io.millrace.core.change.SnapshotProgress.skipped(Lsn.of(0x10)))
                .withTables(new java.util.TreeMap<>(Map.of(42, old))).withRules(new java.util.TreeMap<>(Map.of(42, before.fingerprint(old))));
        Recording rec = new Recording() {
            @Override
            public Optional<Checkpoint> open() {
                return Optional.of(recorded);
            }
        };
        Sink sink = fixed.wrap(rec);
        Checkpoint start = sink.open().orElseThrow();
        sink.write(List.of(), start);
        assertThat(rec.checkpoints.get(0).rules()).containsExactly(Map.entry(42, before.fingerprint(old)))
                .doesNotContainValue(fixed.fingerprint(old));
        RelationInfo renamed = customers().renamed(now);
        sink.write(List.of(new ChangeEvent(Op.CREATE, renamed, null, new Object[]{2, "x@y", "123", "p", "n", null}, Lsn.ZERO,
                Position.START, 1, 0, false)), start.withTables(new java.util.TreeMap<>(Map.of(42, now))));
        assertThat(rec.got.get(0).after()[2]).as("masked").isEqualTo("[redacted]");
        assertThat(rec.checkpoints.get(1).rules()).containsExactly(Map.entry(42, fixed.fingerprint(now)));
    }

    /**
     * A table renamed in the source while streaming, away from the exact-name rule that masked it: its changes are
     * refused (not written, in clear) until a rule matches it as before, or a checkpoint copies it again reconciling.
     */
    @Test
    void aTableRenamedAwayFromItsRuleIsRefusedNotPassedInClear() {
        Transforms masked = parse("  tables: [{match: public.customers, mask: {ssn: redact}}]\n");
        Recording rec = new Recording();
        Sink sink = masked.wrap(rec);
        sink.open();
        Checkpoint cp = new Checkpoint(Checkpoint.VERSION, new io.millrace.core.change.Identity("1", "d", "s", "p", "rec"), Lsn.of(0x10),
                Position.START, io.millrace.core.change.SnapshotProgress.skipped(Lsn.of(0x10)))
                .withTables(new java.util.TreeMap<>(Map.of(42, new TableRef("public", "customers"))));
        Object[] row = {1, "a@b", "123-45-6789", "p", "n", null};
        sink.write(List.of(new ChangeEvent(Op.CREATE, customers(), null, row, Lsn.ZERO, Position.START, 1, 0, false)), cp);
        RelationInfo renamed = customers().renamed(new TableRef("public", "clients"));
        ChangeEvent later = new ChangeEvent(Op.CREATE, renamed, null, row, Lsn.ZERO, Position.START, 2, 0, false);
        MillraceException e = catchThrowableOfType(MillraceException.class, () -> sink.write(List.of(later),
                cp.withTables(new java.util.TreeMap<>(Map.of(42, renamed.table())))));
        assertThat(e.kind()).isEqualTo(MillraceException.Kind.CONFIG);
        assertThat(e.getMessage()).contains("public.customers was renamed to public.clients").contains("no transforms rule")
                .contains("held back").doesNotContain("123-45-6789");
        assertThat(rec.got).hasSize(1);
        assertThatThrownBy(() -> sink.write(List.of(later), cp.withTables(new java.util.TreeMap<>(Map.of(42, renamed.table())))
                .withOnline(List.of(io.millrace.core.change.OnlineTask.reconciling(renamed))))).as("nor while a copy of it runs: it would"
                + " copy it in clear").isInstanceOf(MillraceException.class);
        Transforms.replace(sink, parse("  tables: [{match: public.clients, mask: {ssn: redact}}]\n"));
        sink.write(List.of(later), cp.withTables(new java.util.TreeMap<>(Map.of(42, renamed.table()))));
        assertThat(rec.got).as("a rule matching the new name as the old one did: passed on, masked").hasSize(2);
        assertThat(rec.got.get(1).after()[2]).isEqualTo("[redacted]");
    }

    /** A masked column renamed while streaming: the batch is refused (not written), never passed on in clear. */
    @Test
    void aMaskedColumnGoneFromTheShapeStopsTheWriteInsteadOfLeaking() {
        Recording rec = new Recording();
        Sink sink = parse(RULE).wrap(rec);
        RelationInfo renamed = new RelationInfo(42, new TableRef("public", "customers"), 'd', List.of(
                new ColumnInfo("id", Codecs.builtin(23), -1, true),
                new ColumnInfo("email", Codecs.builtin(25), -1, false),
                new ColumnInfo("social", Codecs.builtin(25), -1, false),
                new ColumnInfo("phone", Codecs.builtin(25), -1, false),
                new ColumnInfo("notes", Codecs.builtin(25), -1, false),
                new ColumnInfo("born", Codecs.builtin(1082), -1, false)), TypeResolver.builtinsOnly());
        MillraceException e = catchThrowableOfType(MillraceException.class, () -> sink.write(List.of(new ChangeEvent(Op.CREATE, renamed,
                null, new Object[]{1, "a", "123-45-6789", "p", "n", null}, Lsn.ZERO, Position.START, 1, 0, false)), null));
        assertThat(e.kind()).isEqualTo(MillraceException.Kind.CONFIG);
        assertThat(e.getMessage()).contains("transforms.tables[0]").contains("'ssn'").contains("no longer has").doesNotContain("123-45");
        assertThat(rec.got).as("nothing written").isEmpty();
    }

    /**
     * A rename is read both ways: the name a rule gives a table, and the table a destination holds under such a name (a
     * destination's checkpoint holds the rule's names; the engine follows tables by the source's). Renames that would put
     * two tables in one are refused as the configuration is read.
     */
    @Test
    void aRenameGivesEachTableOneNameAndIsReadBack() {
        Transforms t = parse("  tables:\n    - match: public.*\n      rename: \"mirror.{table}_v2\"\n"
                + "    - match: app.orders\n      rename: \"archive.old_orders\"\n"
                + "    - match: \"*.events\"\n      rename: \"{schema}_{table}.{table}\"\n");
        TableRef orders = TableRef.parse("public.orders");
        assertThat(t.destinationName(orders)).isEqualTo(TableRef.parse("mirror.orders_v2"));
        assertThat(t.sourceName(TableRef.parse("mirror.orders_v2"))).isEqualTo(orders);
        assertThat(t.destinationName(TableRef.parse("app.orders"))).isEqualTo(TableRef.parse("archive.old_orders"));
        assertThat(t.sourceName(TableRef.parse("archive.old_orders"))).isEqualTo(TableRef.parse("app.orders"));
        assertThat(t.sourceName(TableRef.parse("sales_events.events"))).isEqualTo(TableRef.parse("sales.events"));
        assertThat(t.sourceName(TableRef.parse("sales_events.other"))).as("{table} twice: the same value").isNull();
        assertThat(t.sourceName(TableRef.parse("mirror.orders"))).as("no rule gives that name").isNull();
        assertThat(t.destinationName(TableRef.parse("other.t"))).isEqualTo(TableRef.parse("other.t"));

        assertThat(fail("  tables:\n    - match: public.*\n      rename: \"mirror.all\"\n")).contains("transforms.tables[0].rename")
                .contains("would mix in one");
        assertThat(fail("  tables:\n    - match: \"*.orders\"\n      rename: \"mirror.{table}\"\n")).contains("{schema} too");
        assertThat(fail("  tables:\n    - match: public.orders\n      rename: \"mirror\"\n")).contains("must be schema.table");
    }

    /**
     * Two source tables under one destination name are refused before the batch is written (two rules giving one name;
     * for tables joining while streaming, which the start's check did not see), but a table dropped and created again
     * under its name keeps the rule's name for it.
     */
    @Test
    void aDestinationNameIsOneSourceTablesAtATime() {
        Recording rec = new Recording();
        Sink sink = parse("  tables:\n    - match: public.a\n      rename: \"mirror.x\"\n    - match: public.b\n      rename: \"mirror.x\"\n")
                .wrap(rec);
        java.util.function.BiFunction<Integer, String, ChangeEvent> insert = (oid, table) -> new ChangeEvent(Op.CREATE,
                new RelationInfo(oid, new TableRef("public", table), 'd', List.of(new ColumnInfo("id", Codecs.builtin(23), -1, true)),
                        TypeResolver.builtinsOnly()), null, new Object[]{oid}, Lsn.ZERO, Position.START, 1, 0, false);
        sink.write(List.of(insert.apply(1, "a")), null);
        sink.write(List.of(insert.apply(2, "a")), null); // public.a dropped and created again
        assertThat(rec.got).extracting(e -> e.relation().table().toString()).containsExactly("mirror.x", "mirror.x");
        MillraceException e = catchThrowableOfType(MillraceException.class, () -> sink.write(List.of(insert.apply(3, "b")), null));
        assertThat(e.kind()).isEqualTo(MillraceException.Kind.CONFIG);
        assertThat(e.getMessage()).contains("transforms.tables[1].rename").contains("public.b and public.a").contains("mirror.x")
                .contains("this batch was not written");
        assertThat(rec.got).hasSize(2);
    }
}
