package io.millrace.bench.jmh;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;

/**
 * One typical row of the benchmark table {@code bench(id bigint, a int, b text, c timestamptz,
 * d numeric(12,2), e text)} as pgoutput sends it (protocol v1): the Relation message and an Insert
 * message with the values in text and in binary format, byte for byte as the server writes them
 * (src/backend/replication/logical/proto.c). No server needed.
 */
public final class BenchRow {
    public static final int OID = 16_384;
    public static final int INT8 = 20;
    public static final int INT4 = 23;
    public static final int TEXT = 25;
    public static final int TIMESTAMPTZ = 1184;
    public static final int NUMERIC = 1700;
    /** numeric(12,2): ((12 << 16) | 2) + VARHDRSZ. */
    public static final int NUMERIC_12_2 = ((12 << 16) | 2) + 4;

    public static final long ID = 123_456L;
    public static final int A = 654_321;
    public static final String B = "name-e10adc3949ba59abbe56e057f20f883e";
    /** 2026-01-02 10:17:36.123456+00 in microseconds since 2000-01-01 UTC. */
    public static final long C_PG_MICROS = 820_664_256_123_456L;
    public static final String C_TEXT = "2026-01-02 10:17:36.123456+00";
    public static final String D_TEXT = "12345.67";
    public static final String E = "9c3e7ed7a1a1f7d8b0c5cf8b7e8a6d1ff0e2d8a1c6b4e3f2a1b0c9d8e7f6a5b4";

    private BenchRow() {
    }

    /** The Relation message of table public.bench (replica identity default, key id). */
    public static byte[] relation() {
        W w = new W().i8('R').i32(OID).str("public").str("bench").i8('d').i16(6);
        w.i8(1).str("id").i32(INT8).i32(-1);
        w.i8(0).str("a").i32(INT4).i32(-1);
        w.i8(0).str("b").i32(TEXT).i32(-1);
        w.i8(0).str("c").i32(TIMESTAMPTZ).i32(-1);
        w.i8(0).str("d").i32(NUMERIC).i32(NUMERIC_12_2);
        w.i8(0).str("e").i32(TEXT).i32(-1);
        return w.bytes();
    }

    /** An Insert with every value in text format. */
    public static byte[] insertText() {
        W w = new W().i8('I').i32(OID).i8('N').i16(6);
        for (String v : new String[]{Long.toString(ID), Integer.toString(A), B, C_TEXT, D_TEXT, E}) {
            byte[] b = v.getBytes(StandardCharsets.UTF_8);
            w.i8('t').i32(b.length).raw(b);
        }
        return w.bytes();
    }

    /** The same Insert with every value in binary format (the send functions' output). */
    public static byte[] insertBinary() {
        W w = new W().i8('I').i32(OID).i8('N').i16(6);
        w.i8('b').i32(8).i64(ID);
        w.i8('b').i32(4).i32(A);
        byte[] b = B.getBytes(StandardCharsets.UTF_8);
        w.i8('b').i32(b.length).raw(b);
        w.i8('b').i32(8).i64(C_PG_MICROS);
        // numeric_send of 12345.67: ndigits 3, weight 1, sign +, dscale 2, base-10000 digits 1 2345 6700
        w.i8('b').i32(8 + 3 * 2).i16(3).i16(1).i16(0).i16(2).i16(1).i16(2345).i16(6700);
        byte[] e = E.getBytes(StandardCharsets.UTF_8);
        w.i8('b').i32(e.length).raw(e);
        return w.bytes();
    }

    private static final class W {
        private final ByteArrayOutputStream out = new ByteArrayOutputStream();

        W i8(int v) {
            out.write(v);
            return this;
        }

        W i16(int v) {
            out.write(v >>> 8);
            out.write(v);
            return this;
        }

        W i32(long v) {
            out.write((int) (v >>> 24));
            out.write((int) (v >>> 16));
            out.write((int) (v >>> 8));
            out.write((int) v);
            return this;
        }

        W i64(long v) {
            return i32(v >>> 32).i32(v);
        }

        W str(String s) {
            out.writeBytes(s.getBytes(StandardCharsets.UTF_8));
            out.write(0);
            return this;
        }

        W raw(byte[] b) {
            out.writeBytes(b);
            return this;
        }

        byte[] bytes() {
            return out.toByteArray();
        }
    }
}
