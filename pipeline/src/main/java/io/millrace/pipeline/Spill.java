package io.millrace.pipeline;

import io.millrace.core.Lsn;
import io.millrace.core.MillraceException;
import io.millrace.core.MillraceException.Kind;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.stream.Stream;

/**
 * Holds the messages of streamed (in-progress) transactions on disk until their commit, so a
 * transaction of any size passes in bounded memory (INV: BOUNDED), and an aborted one leaves no
 * trace. One append-only file per top-level transaction: records of
 * {@code [int length][long walStart][int subXid][bytes]} in arrival (WAL) order. A sub-transaction
 * abort only marks its xid: its row messages are skipped at replay (its Relation and Type messages
 * are kept — the parent may rely on them).
 *
 * <p>Spill files do not outlive the engine: the folder is emptied at start, because after a restart
 * the server streams every uncommitted transaction again from its beginning. Single-threaded
 * (pipeline thread).
 */
final class Spill implements AutoCloseable {
    /** A spilled message. */
    record Record(Lsn walStart, long subXid, byte[] data) {
    }

    private static final String LOCK = ".lock";
    private final Path dir;
    private FileLock lock;
    private final Map<Long, DataOutputStream> open = new HashMap<>();
    private final Map<Long, Set<Long>> abortedSubs = new HashMap<>();
    private long bytesOnDisk;
    private final PipelineStats stats;

    Spill(Path dir, PipelineStats stats) {
        this.dir = dir;
        this.stats = stats;
        try {
            Files.createDirectories(dir);
            lock = lock(dir);
            try (Stream<Path> old = Files.list(dir)) {
                for (Path p : old.filter(p -> !p.getFileName().toString().equals(LOCK)).sorted(Comparator.reverseOrder()).toList()) {
                    Files.delete(p);
                }
            }
        } catch (IOException e) {
            close(lock);
            throw new MillraceException(Kind.CONFIG, "cannot use " + dir + " to hold large transactions (pipeline.spill_dir): "
                    + e.getMessage() + ". Point pipeline.spill_dir at a writable folder with room for the largest transaction", e);
        }
    }

    /**
     * Holds the folder for this pipeline while it runs. Another pipeline given the same folder (two processes, or two
     * pipelines of one application) would empty it at its start and write files of the same names (xids of its own
     * server): the other's large transactions lost or mixed with changes of another server (INV: IDENTITY). The second is
     * refused.
     */
    private static FileLock lock(Path dir) throws IOException {
        FileChannel ch = FileChannel.open(dir.resolve(LOCK), StandardOpenOption.CREATE, StandardOpenOption.WRITE);
        FileLock l;
        try {
            l = ch.tryLock();
        } catch (OverlappingFileLockException e) {
            l = null; // held by another pipeline of this JVM
        } catch (IOException e) {
            ch.close();
            throw e;
        }
        if (l == null) {
            ch.close();
            throw new MillraceException(Kind.CONFIG, "pipeline.spill_dir " + dir + " is in use by another running pipeline, which keeps"
                    + " its large transactions there: give each pipeline its own pipeline.spill_dir");
        }
        return l;
    }

    private static void close(FileLock l) {
        if (l != null) {
            try {
                l.channel().close(); // releases the lock
            } catch (IOException ignored) {
                // the process ends it anyway
            }
        }
    }

    private Path file(long xid) {
        return dir.resolve("xid-" + xid + ".spill");
    }

    boolean has(long xid) {
        return open.containsKey(xid);
    }

    void begin(long xid) {
        if (open.containsKey(xid)) {
            throw new MillraceException(Kind.DECODE, "pgoutput started streamed transaction " + xid + " twice");
        }
        try {
            open.put(xid, new DataOutputStream(new BufferedOutputStream(Files.newOutputStream(file(xid)), 1 << 16)));
        } catch (IOException e) {
            throw spillError(e);
        }
    }

    void append(long xid, Lsn walStart, long subXid, byte[] data, int off, int len) {
        DataOutputStream out = open.get(xid);
        if (out == null) {
            throw new MillraceException(Kind.DECODE, "pgoutput sent a later block of streamed transaction " + xid
                    + " whose first block was not seen");
        }
        try {
            out.writeInt(len);
            out.writeLong(walStart.value());
            out.writeInt((int) subXid);
            out.write(data, off, len);
            bytesOnDisk += len + 16;
            stats.spilled(len);
        } catch (IOException e) {
            throw spillError(e);
        }
    }

    void abortSub(long xid, long subXid) {
        abortedSubs.computeIfAbsent(xid, k -> new HashSet<>()).add(subXid);
    }

    boolean aborted(long xid, long subXid) {
        Set<Long> s = abortedSubs.get(xid);
        return s != null && s.contains(subXid);
    }

    /** Drops a transaction's spill (abort, or after replay). */
    void discard(long xid) {
        DataOutputStream out = open.remove(xid);
        abortedSubs.remove(xid);
        try {
            if (out != null) {
                out.close();
            }
            Files.deleteIfExists(file(xid));
        } catch (IOException e) {
            throw spillError(e);
        }
    }

    /** Reads a committed transaction's records in order, one at a time. */
    interface Reader extends AutoCloseable {
        /** The next record, or null at the end. */
        Record next();

        @Override
        void close();
    }

    Reader replay(long xid) {
        DataOutputStream out = open.get(xid);
        if (out == null) {
            throw new MillraceException(Kind.DECODE, "pgoutput committed streamed transaction " + xid + " whose changes were not seen");
        }
        try {
            out.flush();
            DataInputStream in = new DataInputStream(new BufferedInputStream(Files.newInputStream(file(xid)), 1 << 16));
            return new Reader() {
                @Override
                public Record next() {
                    try {
                        int len;
                        try {
                            len = in.readInt();
                        } catch (EOFException end) {
                            return null;
                        }
                        long wal = in.readLong();
                        long sub = Integer.toUnsignedLong(in.readInt());
                        byte[] b = new byte[len];
                        in.readFully(b);
                        return new Record(Lsn.of(wal), sub, b);
                    } catch (IOException e) {
                        throw spillError(e);
                    }
                }

                @Override
                public void close() {
                    try {
                        in.close();
                    } catch (IOException e) {
                        throw new UncheckedIOException(e);
                    }
                }
            };
        } catch (IOException e) {
            throw spillError(e);
        }
    }

    int openTransactions() {
        return open.size();
    }

    long bytesOnDisk() {
        return bytesOnDisk;
    }

    private MillraceException spillError(IOException e) {
        return new MillraceException(Kind.INTERNAL, "spilling a large transaction to " + dir + " failed: " + e.getMessage()
                + ". Check free space there (pipeline.spill_dir)", e);
    }

    @Override
    public void close() {
        try {
            for (long xid : open.keySet().toArray(new Long[0])) {
                discard(xid);
            }
        } finally {
            close(lock);
            lock = null;
        }
    }
}
