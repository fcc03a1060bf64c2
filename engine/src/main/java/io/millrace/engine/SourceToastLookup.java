package io.millrace.engine;

import io.millrace.core.schema.ColumnInfo;
import io.millrace.core.schema.Ident;
import io.millrace.core.schema.RelationInfo;
import io.millrace.core.types.UnchangedToast;
import io.millrace.engine.transform.ToastLookup;
import io.millrace.source.PgConnections;
import io.millrace.source.PgErrors;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * {@link ToastLookup} on the source: one query per call, joining the table to the keys given as text arrays (cast to the
 * key columns' types, so the table's key index serves it), on a connection of its own kept open between calls (opened
 * again after a failure). Threads: one destination's writer thread.
 */
final class SourceToastLookup implements ToastLookup {
    /** Keys per query; a batch with more is read in several. */
    private static final int KEYS_PER_QUERY = 5_000;

    private final PgConnections conns;
    private Connection c;

    SourceToastLookup(PgConnections conns) {
        this.conns = conns;
    }

    @Override
    public List<Object[]> rows(RelationInfo r, List<Object[]> keys) {
        List<Object[]> out = new ArrayList<>(keys.size());
        try {
            for (int from = 0; from < keys.size(); from += KEYS_PER_QUERY) {
                out.addAll(read(r, keys.subList(from, Math.min(keys.size(), from + KEYS_PER_QUERY))));
            }
            return out;
        } catch (SQLException e) {
            close();
            throw PgErrors.translate("reading unchanged TOAST values of " + r.table() + " by key (transforms.toast: complete)", e);
        }
    }

    private List<Object[]> read(RelationInfo r, List<Object[]> keys) throws SQLException {
        if (c == null || c.isClosed()) {
            c = conns.open();
            c.setReadOnly(true);
        }
        int[] key = r.keyIndexes();
        StringBuilder cols = new StringBuilder("u.ord");
        for (int i = 0; i < r.columnCount(); i++) {
            cols.append(", t.").append(Ident.quote(r.column(i).name())).append("::text");
        }
        StringBuilder unnest = new StringBuilder("unnest(?::int[]");
        StringBuilder on = new StringBuilder();
        for (int j = 0; j < key.length; j++) {
            ColumnInfo k = r.column(key[j]);
            unnest.append(", ?::text[]");
            on.append(j == 0 ? "" : " AND ").append("t.").append(Ident.quote(k.name())).append(" = u.k").append(j).append("::")
                    .append(Ident.qualified(k.type().schema(), k.type().name()));
        }
        StringBuilder names = new StringBuilder("ord");
        for (int j = 0; j < key.length; j++) {
            names.append(", k").append(j);
        }
        String sql = "SELECT " + cols + " FROM " + r.table().sql() + " t JOIN " + unnest + ") AS u(" + names + ") ON " + on;
        Object[][] result = new Object[keys.size()][];
        try (PreparedStatement ps = c.prepareStatement(sql)) {
            Integer[] ord = new Integer[keys.size()];
            for (int i = 0; i < ord.length; i++) {
                ord[i] = i;
            }
            ps.setArray(1, c.createArrayOf("int4", ord));
            for (int j = 0; j < key.length; j++) {
                String[] texts = new String[keys.size()];
                for (int i = 0; i < texts.length; i++) {
                    texts[i] = r.codec(key[j]).toPgText(keys.get(i)[j]);
                }
                ps.setArray(2 + j, c.createArrayOf("text", texts));
            }
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    Object[] row = new Object[r.columnCount()];
                    Arrays.fill(row, UnchangedToast.INSTANCE);
                    for (int i = 0; i < row.length; i++) {
                        String text = rs.getString(2 + i);
                        row[i] = text == null ? null : r.codec(i).decodeText(text);
                    }
                    result[rs.getInt(1)] = row;
                }
            }
        }
        return Arrays.asList(result);
    }

    @Override
    public void close() {
        if (c != null) {
            try {
                c.close();
            } catch (SQLException ignored) {
                // the connection is gone either way
            }
            c = null;
        }
    }
}
