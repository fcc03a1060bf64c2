package io.millrace.pgoutput;

import io.millrace.core.schema.ColumnInfo;
import io.millrace.core.schema.RelationInfo;
import io.millrace.core.types.UnchangedToast;
import io.millrace.pgoutput.PgOutputMessage.Begin;
import io.millrace.pgoutput.PgOutputMessage.Commit;
import io.millrace.pgoutput.PgOutputMessage.Delete;
import io.millrace.pgoutput.PgOutputMessage.Insert;
import io.millrace.pgoutput.PgOutputMessage.LogicalMessage;
import io.millrace.pgoutput.PgOutputMessage.Origin;
import io.millrace.pgoutput.PgOutputMessage.RelationMessage;
import io.millrace.pgoutput.PgOutputMessage.StreamAbort;
import io.millrace.pgoutput.PgOutputMessage.StreamCommit;
import io.millrace.pgoutput.PgOutputMessage.StreamStart;
import io.millrace.pgoutput.PgOutputMessage.StreamStop;
import io.millrace.pgoutput.PgOutputMessage.Truncate;
import io.millrace.pgoutput.PgOutputMessage.TypeMessage;
import io.millrace.pgoutput.PgOutputMessage.Update;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

/**
 * Turns framed messages into one line per committed transaction (and per non-transactional
 * logical message), decoding every tuple. Streamed transactions are reassembled the way a
 * consumer must: changes buffered per top-level xid, a subtransaction's changes dropped on its
 * Stream Abort, the whole transaction emitted at Stream Commit. So a stream read with
 * {@code streaming on} must give the same lines as one read without.
 *
 * <p>Rows of a table named {@code big} are written as {@code #id}; runs of consecutive ids are
 * folded into {@code I big #first..#last}.
 */
final class StreamTrace {
    private StreamTrace() {
    }

    private record Change(long xid, String line) {
    }

    static List<String> units(List<PgOutputMessage> messages) {
        List<String> out = new ArrayList<>();
        List<String> tx = null;
        Map<Long, List<Change>> streamed = new LinkedHashMap<>();
        long block = -1;
        for (PgOutputMessage m : messages) {
            if (m instanceof Begin) {
                tx = new ArrayList<>();
            } else if (m instanceof Commit) {
                if (!tx.isEmpty()) {
                    out.add(fold(tx));
                }
                tx = null;
            } else if (m instanceof StreamStart s) {
                block = s.xid();
                streamed.computeIfAbsent(s.xid(), k -> new ArrayList<>());
            } else if (m instanceof StreamStop) {
                block = -1;
            } else if (m instanceof StreamCommit c) {
                List<Change> changes = streamed.remove(c.xid());
                if (changes != null && !changes.isEmpty()) {
                    out.add(fold(changes.stream().map(Change::line).collect(Collectors.toList())));
                }
            } else if (m instanceof StreamAbort a) {
                if (a.xid() == a.subXid()) {
                    streamed.remove(a.xid());
                } else {
                    List<Change> changes = streamed.get(a.xid());
                    if (changes != null) {
                        changes.removeIf(c -> c.xid() == a.subXid());
                    }
                }
            } else if (m instanceof RelationMessage || m instanceof TypeMessage) {
                continue;
            } else {
                String line = describe(m);
                long xid = xidOf(m);
                if (block >= 0) {
                    streamed.get(block).add(new Change(xid, line));
                } else if (tx != null) {
                    tx.add(line);
                } else {
                    out.add(line); // a non-transactional logical message
                }
            }
        }
        return out;
    }

    private static long xidOf(PgOutputMessage m) {
        if (m instanceof Insert i) {
            return i.xid();
        } else if (m instanceof Update u) {
            return u.xid();
        } else if (m instanceof Delete d) {
            return d.xid();
        } else if (m instanceof Truncate t) {
            return t.xid();
        } else if (m instanceof LogicalMessage l) {
            return l.xid();
        }
        return 0;
    }

    static String describe(PgOutputMessage m) {
        if (m instanceof Insert i) {
            return "I " + shape(i.relation()) + values(i.relation(), i.newTuple());
        } else if (m instanceof Update u) {
            return "U " + shape(u.relation()) + (u.oldTuple() == null ? "" : u.oldKind() + values(u.relation(), u.oldTuple()) + " -> ")
                    + values(u.relation(), u.newTuple());
        } else if (m instanceof Delete d) {
            return "D " + shape(d.relation()) + d.oldKind() + values(d.relation(), d.oldTuple());
        } else if (m instanceof Truncate t) {
            return "T " + t.relations().stream().map(r -> r.table().table()).collect(Collectors.toList())
                    + (t.cascade() ? " cascade" : "") + (t.restartIdentity() ? " restart" : "");
        } else if (m instanceof LogicalMessage l) {
            return "M " + (l.transactional() ? "tx " : "nontx ") + l.prefix() + " " + new String(l.content(), StandardCharsets.UTF_8);
        } else if (m instanceof Origin o) {
            return "O " + o.name() + " " + o.originLsn();
        }
        throw new AssertionError("unexpected message " + m);
    }

    private static String shape(RelationInfo r) {
        if (r.table().table().equals("big") || r.table().table().equals("typed")) {
            return r.table().table() + " ";
        }
        return r.table().table() + r.columns().stream().map(ColumnInfo::name).collect(Collectors.joining(",", "(", ")"));
    }

    private static String values(RelationInfo relation, RawTuple tuple) {
        Object[] v = tuple.decode(relation);
        if (relation.table().table().equals("typed")) {
            return "#" + v[0]; // its values are checked one by one in the IT
        }
        if (relation.table().table().equals("big")) {
            String expected = BigRows.payload((Integer) v[0]);
            return "#" + v[0] + (expected.equals(v[1]) ? "" : " BAD PAYLOAD " + v[1]);
        }
        List<String> parts = new ArrayList<>();
        for (Object o : v) {
            if (o == null) {
                parts.add("null");
            } else if (o == UnchangedToast.INSTANCE) {
                parts.add("toast");
            } else if (o instanceof String s && s.length() > 100) {
                parts.add("<" + s.length() + " chars>");
            } else {
                parts.add(o.toString());
            }
        }
        return parts.toString();
    }

    private static final Pattern BIG = Pattern.compile("I big #(\\d+)");

    /** Folds runs of big-table inserts with consecutive ids. */
    private static String fold(List<String> lines) {
        List<String> out = new ArrayList<>();
        long first = -1;
        long last = -1;
        for (String line : lines) {
            Matcher mt = BIG.matcher(line);
            if (mt.matches()) {
                long id = Long.parseLong(mt.group(1));
                if (first >= 0 && id == last + 1) {
                    last = id;
                    continue;
                }
                flush(out, first, last);
                first = id;
                last = id;
            } else {
                flush(out, first, last);
                first = -1;
                out.add(line);
            }
        }
        flush(out, first, last);
        return String.join(" | ", out);
    }

    private static void flush(List<String> out, long first, long last) {
        if (first >= 0) {
            out.add("I big #" + first + ".." + "#" + last);
        }
    }

    /** The rows the workload writes into {@code big}: id and a payload derived from it. */
    static final class BigRows {
        private BigRows() {
        }

        /** Same as SQL {@code repeat(md5(id::text), 4)}. */
        static String payload(int id) {
            try {
                byte[] d = java.security.MessageDigest.getInstance("MD5").digest(Integer.toString(id).getBytes(StandardCharsets.UTF_8));
                StringBuilder hex = new StringBuilder();
                for (byte b : d) {
                    hex.append(String.format("%02x", b & 0xFF));
                }
                return hex.toString().repeat(4);
            } catch (java.security.NoSuchAlgorithmException e) {
                throw new IllegalStateException(e);
            }
        }
    }
}
