package io.millrace.source;

import io.millrace.core.MillraceException;
import io.millrace.core.MillraceException.Kind;
import io.millrace.core.schema.SchemaChange;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;

/**
 * The optional event trigger that tells the stream exactly what each DDL changed (issue 15), installed on request
 * ({@code millrace setup CONFIG}, or by hand with {@link #sql()}).
 *
 * <p>pgoutput announces no DDL: a Relation message shows a table's new shape before its next change, with names and
 * types but no attribute numbers, so a column renamed cannot be told from one dropped and another added. With the
 * trigger, {@code ddl_command_end} writes, for every table a command changed, a transactional logical message
 * ({@code pg_logical_emit_message(true, 'millrace.ddl', json)}, see {@link SchemaChange}) with the command tag, the
 * table's oid and old and new names, its columns by attribute number with their names before and after, their types
 * and, for a column added with a constant default, the value old rows take; {@code sql_drop} writes one for a table
 * dropped. The message is part of the DDL's transaction, so it is decoded in order with the data (INV: ORDER) and only
 * if the DDL committed.
 *
 * <p>To know the names before a change, the trigger keeps each table's column names after the last DDL it saw in
 * {@code millrace.ddl_shape}, an unlogged table (never published, no WAL; emptied by a crash of the server, after
 * which the first DDL of each table is read as without the trigger). The functions are {@code SECURITY DEFINER}, so a
 * DDL by any role can write the message and that table.
 *
 * <p>It also keeps the source's writes working on a keyless partitioned table: PostgreSQL gives a new partition no
 * replica identity of its own (it does not take its root's), so once its root is published every UPDATE and DELETE of
 * the partition's rows fails ("cannot update table ... because it does not have a replica identity and publishes
 * updates"). A partition created or attached under a root with REPLICA IDENTITY FULL, and with no primary key of its
 * own, is given REPLICA IDENTITY FULL in the same transaction (the fix preflight prints for the partitions that exist).
 * Without the trigger the engine finds such a partition at its next look at the catalog and names it with the fix
 * ({@code not_captured} in the status); until then the source's UPDATEs of it fail. The same holds for a published
 * table that an {@code ALTER TABLE} leaves with no replica identity (its primary key dropped, or {@code REPLICA IDENTITY
 * DEFAULT} on a keyless table): when a publication names it and the ALTER dropped a constraint (its primary key), the
 * trigger gives it REPLICA IDENTITY FULL in the same transaction, and DEFAULT again once an ALTER gives it a primary
 * key again, in that transaction or a later one (which tables it gave FULL is kept in {@code millrace.ddl_shape}, until
 * the user sets a replica identity themselves; that table is unlogged, so a crash of the server forgets it and the table
 * keeps FULL, which costs WAL only); a partitioned root's partitions, which lose the key with it, likewise (each has a
 * replica identity of its own). An explicit {@code REPLICA IDENTITY DEFAULT} or {@code NOTHING} is the user's: left as it is (the
 * engine names the table with the fix).
 *
 * <p>PostgreSQL lets only a superuser create an event trigger: {@link #install} refuses another role naming that.
 */
public final class DdlTrigger {
    /** The event triggers' names. */
    public static final String COMMAND_END = "millrace_ddl_command_end";
    public static final String SQL_DROP = "millrace_ddl_sql_drop";
    public static final String TABLE_REWRITE = "millrace_ddl_table_rewrite";

    private static final String SKIP = "nsp IN ('millrace', 'pg_catalog', 'information_schema') OR nsp LIKE 'pg\\_%'";

    private DdlTrigger() {
    }

    /** The SQL that installs (or replaces) the trigger, to run as a superuser; idempotent. */
    public static String sql() {
        String prefix = "'" + SchemaChange.PREFIX + "'";
        return """
                CREATE SCHEMA IF NOT EXISTS millrace;
                CREATE UNLOGGED TABLE IF NOT EXISTS millrace.ddl_shape (relid oid PRIMARY KEY, nspname text NOT NULL,
                    relname text NOT NULL, columns jsonb NOT NULL);
                -- whether the trigger gave the table REPLICA IDENTITY FULL when its primary key was dropped: DEFAULT again
                -- once it has one again, in any later transaction
                ALTER TABLE millrace.ddl_shape ADD COLUMN IF NOT EXISTS identity_full boolean NOT NULL DEFAULT false;
                CREATE OR REPLACE FUNCTION millrace.ddl_names(rel oid) RETURNS jsonb LANGUAGE sql STABLE
                    SET search_path = pg_catalog, pg_temp AS $fn$
                    SELECT coalesce(jsonb_object_agg(a.attnum::text, a.attname::text), '{}'::jsonb) FROM pg_attribute a
                    WHERE a.attrelid = rel AND a.attnum > 0 AND NOT a.attisdropped $fn$;
                CREATE OR REPLACE FUNCTION millrace.ddl_mark_full(rel oid, mark boolean) RETURNS void LANGUAGE sql
                    SET search_path = pg_catalog, pg_temp AS $fn$
                    INSERT INTO millrace.ddl_shape (relid, nspname, relname, columns, identity_full)
                        SELECT c.oid, n.nspname, c.relname, millrace.ddl_names(c.oid), mark
                        FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = rel
                    ON CONFLICT (relid) DO UPDATE SET identity_full = EXCLUDED.identity_full $fn$;
                CREATE OR REPLACE FUNCTION millrace.ddl_command_end() RETURNS event_trigger LANGUAGE plpgsql SECURITY DEFINER
                    SET search_path = pg_catalog, pg_temp AS $fn$
                DECLARE
                    rel oid; tag text; nsp text; rname text; cols jsonb; prev record; part regclass; rewritten boolean;
                    seen text := coalesce(current_setting('millrace.rewritten', true), '');
                BEGIN
                    FOR rel, tag IN SELECT DISTINCT d.objid, d.command_tag FROM pg_event_trigger_ddl_commands() d
                            WHERE d.classid = 'pg_class'::regclass AND d.object_type IN ('table', 'table column') LOOP
                        SELECT n.nspname, c.relname INTO nsp, rname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                            WHERE c.oid = rel AND c.relkind IN ('r', 'p') AND c.relpersistence = 'p';
                        IF NOT FOUND OR %s THEN
                            CONTINUE;
                        END IF;
                        -- a partition created or attached under a REPLICA IDENTITY FULL root, with no key of its own: FULL too
                        IF current_setting('server_version_num')::int >= 120000 THEN
                            FOR part IN SELECT t.relid FROM pg_partition_tree(rel) t JOIN pg_class p ON p.oid = t.relid
                                    WHERE p.relispartition AND p.relkind IN ('r', 'p') AND p.relreplident = 'd'
                                    AND NOT EXISTS (SELECT 1 FROM pg_index x WHERE x.indrelid = p.oid AND x.indisprimary)
                                    AND (SELECT r.relreplident FROM pg_class r WHERE r.oid = pg_partition_root(p.oid)) = 'f'
                                    ORDER BY t.level LOOP
                                EXECUTE format('ALTER TABLE %%s REPLICA IDENTITY FULL', part);
                            END LOOP;
                        END IF;
                        -- a table a publication names, left with no replica identity by a constraint this transaction dropped
                        -- (its primary key): FULL, or every UPDATE and DELETE of it fails; and DEFAULT again once this
                        -- transaction gives it a primary key again (a migration's DROP CONSTRAINT, then ADD PRIMARY KEY)
                        -- (a partitioned root's partitions lose theirs with it, and each has a replica identity of its own)
                        IF tag = 'ALTER TABLE' AND EXISTS (SELECT 1 FROM pg_class c WHERE c.oid = rel AND c.relkind IN ('r', 'p')
                                    AND NOT c.relispartition AND c.relreplident = 'd')
                                AND NOT EXISTS (SELECT 1 FROM pg_index x WHERE x.indrelid = rel AND x.indisprimary)
                                AND (',' || coalesce(current_setting('millrace.constraint_dropped', true), '') || ',')
                                    LIKE ('%%,' || rel::text || ',%%')
                                AND EXISTS (SELECT 1 FROM pg_publication_rel pr WHERE pr.prrelid = rel) THEN
                            IF current_setting('server_version_num')::int >= 120000 THEN
                                FOR part IN SELECT t.relid FROM pg_partition_tree(rel) t JOIN pg_class p ON p.oid = t.relid
                                        WHERE p.relispartition AND p.relkind IN ('r', 'p') AND p.relreplident = 'd'
                                        AND NOT EXISTS (SELECT 1 FROM pg_index x WHERE x.indrelid = p.oid AND x.indisprimary)
                                        ORDER BY t.level LOOP
                                    EXECUTE format('ALTER TABLE %%s REPLICA IDENTITY FULL', part);
                                    PERFORM millrace.ddl_mark_full(part, true);
                                END LOOP;
                            END IF;
                            EXECUTE format('ALTER TABLE %%I.%%I REPLICA IDENTITY FULL', nsp, rname);
                            PERFORM millrace.ddl_mark_full(rel, true);
                        ELSIF tag = 'ALTER TABLE' AND EXISTS (SELECT 1 FROM millrace.ddl_shape s WHERE s.relid = rel AND s.identity_full)
                                AND current_query() !~* 'replica[[:space:]]+identity'
                                AND EXISTS (SELECT 1 FROM pg_class c WHERE c.oid = rel AND c.relreplident = 'f')
                                AND EXISTS (SELECT 1 FROM pg_index x WHERE x.indrelid = rel AND x.indisprimary) THEN
                            IF current_setting('server_version_num')::int >= 120000 THEN
                                -- the partitions the trigger gave FULL, keyed again by the root's new primary key
                                FOR part IN SELECT t.relid FROM pg_partition_tree(rel) t JOIN pg_class p ON p.oid = t.relid
                                        JOIN millrace.ddl_shape s ON s.relid = p.oid AND s.identity_full
                                        WHERE p.relispartition AND p.relkind IN ('r', 'p') AND p.relreplident = 'f'
                                        AND EXISTS (SELECT 1 FROM pg_index x WHERE x.indrelid = p.oid AND x.indisprimary) LOOP
                                    EXECUTE format('ALTER TABLE %%s REPLICA IDENTITY DEFAULT', part);
                                    PERFORM millrace.ddl_mark_full(part, false);
                                END LOOP;
                            END IF;
                            EXECUTE format('ALTER TABLE %%I.%%I REPLICA IDENTITY DEFAULT', nsp, rname);
                            PERFORM millrace.ddl_mark_full(rel, false);
                        ELSIF EXISTS (SELECT 1 FROM pg_class c JOIN millrace.ddl_shape s ON s.relid = c.oid AND s.identity_full
                                WHERE c.oid = rel AND (c.relreplident <> 'f' OR current_query() ~* 'replica[[:space:]]+identity')) THEN
                            -- the user set a replica identity (another, or FULL again by name): theirs from now on
                            PERFORM millrace.ddl_mark_full(rel, false);
                        END IF;
                        SELECT coalesce(jsonb_agg(jsonb_build_object('attnum', a.attnum, 'name', a.attname::text,
                                'type', format_type(a.atttypid, a.atttypmod), 'not_null', a.attnotnull, 'missing', a.atthasmissing,
                                'value', CASE WHEN a.atthasmissing THEN (a.attmissingval::text::text[])[1] END) ORDER BY a.attnum), '[]')
                            INTO cols FROM pg_attribute a WHERE a.attrelid = rel AND a.attnum > 0 AND NOT a.attisdropped;
                        -- a partitioned table has no storage: PostgreSQL keeps a constant default for the existing rows on
                        -- each partition, so a column is "missing" when every leaf has it missing with one and the same value
                        IF current_setting('server_version_num')::int >= 120000
                                AND (SELECT c.relkind FROM pg_class c WHERE c.oid = rel) = 'p' THEN
                            SELECT coalesce(jsonb_agg(jsonb_build_object('attnum', a.attnum, 'name', a.attname::text,
                                    'type', format_type(a.atttypid, a.atttypmod), 'not_null', a.attnotnull,
                                    'missing', coalesce(l.missing, false), 'value', CASE WHEN l.missing THEN l.value END)
                                    ORDER BY a.attnum), '[]')
                                INTO cols FROM pg_attribute a CROSS JOIN LATERAL (
                                    SELECT bool_and(x.atthasmissing) AND count(DISTINCT x.attmissingval::text) = 1 AS missing,
                                        min((x.attmissingval::text::text[])[1]) AS value
                                    FROM pg_partition_tree(rel) t JOIN pg_attribute x ON x.attrelid = t.relid
                                        AND x.attname = a.attname AND NOT x.attisdropped
                                    WHERE t.isleaf AND t.relid <> rel) l
                                WHERE a.attrelid = rel AND a.attnum > 0 AND NOT a.attisdropped;
                        END IF;
                        -- rows rewritten by this transaction's DDL (table_rewrite: ALTER COLUMN TYPE ... USING, even to the same
                        -- type; ADD COLUMN with a volatile default or an identity), the table's or one of its partitions'
                        rewritten := (',' || seen || ',') LIKE ('%%,' || rel::text || ',%%');
                        IF seen <> '' AND NOT rewritten AND current_setting('server_version_num')::int >= 120000 THEN
                            -- a partitioned table's rows are its partitions' (pg_partition_tree lists none for a plain table)
                            SELECT EXISTS (SELECT 1 FROM pg_partition_tree(rel) t
                                WHERE (',' || seen || ',') LIKE ('%%,' || t.relid::oid::text || ',%%')) INTO rewritten;
                        END IF;
                        SELECT s.nspname, s.relname, s.columns INTO prev FROM millrace.ddl_shape s WHERE s.relid = rel;
                        PERFORM pg_logical_emit_message(true, %s, jsonb_build_object('command', tag, 'oid', rel::bigint,
                            'schema', nsp, 'table', rname, 'old_schema', prev.nspname, 'old_table', prev.relname,
                            'before', prev.columns, 'columns', cols, 'dropped', false, 'ddl', left(current_query(), 65536),
                            'rewritten', rewritten,
                            'key', (SELECT coalesce(jsonb_agg(a.attname::text ORDER BY k.ord), '[]') FROM pg_index i
                                JOIN pg_class c ON c.oid = i.indrelid
                                CROSS JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, ord)
                                JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
                                WHERE i.indrelid = rel AND CASE WHEN c.relreplident = 'i' THEN i.indisreplident ELSE i.indisprimary END)
                            )::text);
                        INSERT INTO millrace.ddl_shape VALUES (rel, nsp, rname, millrace.ddl_names(rel)) ON CONFLICT (relid)
                            DO UPDATE SET nspname = EXCLUDED.nspname, relname = EXCLUDED.relname, columns = EXCLUDED.columns;
                    END LOOP;
                END $fn$;
                CREATE OR REPLACE FUNCTION millrace.ddl_sql_drop() RETURNS event_trigger LANGUAGE plpgsql SECURITY DEFINER
                    SET search_path = pg_catalog, pg_temp AS $fn$
                DECLARE
                    o record; nsp text;
                BEGIN
                    -- to the transaction's end: the tables a constraint was dropped from (ddl_command_end: a primary key gone)
                    FOR o IN SELECT * FROM pg_event_trigger_dropped_objects() d WHERE d.object_type = 'table constraint' LOOP
                        PERFORM set_config('millrace.constraint_dropped', coalesce(current_setting('millrace.constraint_dropped',
                            true), '') || ',' || coalesce(to_regclass(format('%%I.%%I', o.address_names[1],
                            o.address_names[2]))::oid::text, ''), true);
                    END LOOP;
                    FOR o IN SELECT * FROM pg_event_trigger_dropped_objects() d
                            WHERE d.classid = 'pg_class'::regclass AND d.object_type = 'table' AND NOT d.is_temporary LOOP
                        nsp := o.schema_name;
                        IF %s THEN
                            CONTINUE;
                        END IF;
                        PERFORM pg_logical_emit_message(true, %s, jsonb_build_object('command', tg_tag, 'oid', o.objid::bigint,
                            'schema', o.schema_name, 'table', o.object_name, 'columns', '[]'::jsonb, 'dropped', true,
                            'ddl', left(current_query(), 65536))::text);
                        DELETE FROM millrace.ddl_shape WHERE relid = o.objid;
                    END LOOP;
                END $fn$;
                CREATE OR REPLACE FUNCTION millrace.ddl_table_rewrite() RETURNS event_trigger LANGUAGE plpgsql SECURITY DEFINER
                    SET search_path = pg_catalog, pg_temp AS $fn$
                BEGIN
                    -- to the transaction's end: ddl_command_end tells the table's rows were rewritten without change events
                    PERFORM set_config('millrace.rewritten', coalesce(current_setting('millrace.rewritten', true), '') || ','
                        || pg_event_trigger_table_rewrite_oid()::text, true);
                END $fn$;
                INSERT INTO millrace.ddl_shape SELECT c.oid, n.nspname, c.relname, millrace.ddl_names(c.oid)
                    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                    WHERE c.relkind IN ('r', 'p') AND c.relpersistence = 'p'
                    AND n.nspname NOT IN ('millrace', 'pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\\_%%'
                    ON CONFLICT (relid) DO UPDATE SET nspname = EXCLUDED.nspname, relname = EXCLUDED.relname, columns = EXCLUDED.columns;
                DROP EVENT TRIGGER IF EXISTS %s;
                CREATE EVENT TRIGGER %s ON ddl_command_end EXECUTE PROCEDURE millrace.ddl_command_end();
                DROP EVENT TRIGGER IF EXISTS %s;
                CREATE EVENT TRIGGER %s ON sql_drop EXECUTE PROCEDURE millrace.ddl_sql_drop();
                DROP EVENT TRIGGER IF EXISTS %s;
                CREATE EVENT TRIGGER %s ON table_rewrite EXECUTE PROCEDURE millrace.ddl_table_rewrite();
                """.formatted(SKIP, prefix, SKIP, prefix, COMMAND_END, COMMAND_END, SQL_DROP, SQL_DROP, TABLE_REWRITE, TABLE_REWRITE);
    }

    /** The SQL that removes the trigger and its table. */
    public static String uninstallSql() {
        return "DROP EVENT TRIGGER IF EXISTS " + COMMAND_END + "; DROP EVENT TRIGGER IF EXISTS " + SQL_DROP + ";"
                + " DROP EVENT TRIGGER IF EXISTS " + TABLE_REWRITE + ";"
                + " DROP SCHEMA IF EXISTS millrace CASCADE;";
    }

    /**
     * Installs the trigger on {@code c}'s database, in one transaction. Refuses (PERMISSION) when the role is not a
     * superuser, and (SOURCE_SETUP) before PostgreSQL 11 ({@code attmissingval}).
     */
    public static void install(Connection c) {
        try {
            if (Catalog.serverVersion(c) < 110000) {
                throw new MillraceException(Kind.SOURCE_SETUP, "the DDL event trigger needs PostgreSQL 11 or newer, this is "
                        + Catalog.setting(c, "server_version") + ": schema changes are read from Relation messages");
            }
            try (PreparedStatement ps = c.prepareStatement("SELECT rolsuper FROM pg_roles WHERE rolname = current_user");
                 ResultSet rs = ps.executeQuery()) {
                if (!rs.next() || !rs.getBoolean(1)) {
                    throw new MillraceException(Kind.PERMISSION, "installing the DDL event trigger needs a superuser (PostgreSQL lets"
                            + " no other role, not even the owner of the tables or the database, create an event trigger); role '"
                            + c.getMetaData().getUserName() + "' is not one. Fix: run 'millrace setup CONFIG' with source.user a"
                            + " superuser, or run the SQL of 'millrace setup --print-sql CONFIG' as one");
                }
            }
            Catalog.inOneTransaction(c, sql());
        } catch (SQLException e) {
            throw PgErrors.translate("installing the DDL event trigger", e);
        }
    }

    /**
     * Whether the trigger's functions on {@code c}'s database are the ones {@link #sql} installs: a trigger installed by an
     * older Millrace writes less (no key: RelationKeys then reads a REPLICA IDENTITY FULL table's key from the catalog),
     * and {@code millrace setup} replaces it.
     */
    public static boolean upToDate(Connection c) throws SQLException {
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("FUNCTION millrace\\.(\\w+)\\(\\) RETURNS event_trigger.*?AS \\$fn\\$(.*?)\\$fn\\$",
                java.util.regex.Pattern.DOTALL).matcher(sql());
        try (PreparedStatement ps = c.prepareStatement("SELECT p.prosrc FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace"
                + " WHERE n.nspname = 'millrace' AND p.proname = ?")) {
            while (m.find()) {
                ps.setString(1, m.group(1));
                try (ResultSet rs = ps.executeQuery()) {
                    if (!rs.next() || !m.group(2).equals(rs.getString(1))) {
                        return false;
                    }
                }
            }
        }
        return true;
    }

    /** Whether both event triggers are installed and enabled on {@code c}'s database. */
    public static boolean installed(Connection c) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("SELECT count(*) FROM pg_event_trigger WHERE evtname IN (?, ?) AND evtenabled <> 'D'")) {
            ps.setString(1, COMMAND_END);
            ps.setString(2, SQL_DROP);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getInt(1) == 2;
            }
        }
    }
}
