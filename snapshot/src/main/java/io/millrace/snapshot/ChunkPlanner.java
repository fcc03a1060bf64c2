package io.millrace.snapshot;

import io.millrace.core.schema.RelationInfo;

import java.util.ArrayList;
import java.util.List;

/**
 * Cuts tables into CTID page ranges (works with or without a primary key). Chunks tile each table
 * (INV: COVER): page ranges {@code [0,p1), [p1,p2), ..., [pn, ∞)} — the first open below, the last
 * open above, so rows on pages added after the size was read are still covered.
 */
final class ChunkPlanner {
    private ChunkPlanner() {
    }

    /**
     * @param pages         the table's size in pages (as seen when planning)
     * @param pagesPerChunk target chunk size
     * @param partitioned   partitioned tables have no ctid of their own: one chunk
     */
    static List<Chunk> plan(RelationInfo r, long pages, long pagesPerChunk, boolean partitioned) {
        List<Chunk> out = new ArrayList<>();
        if (partitioned || pages <= pagesPerChunk) {
            out.add(new Chunk(r, 0, 1, -1, -1));
            return out;
        }
        int n = (int) Math.min(Integer.MAX_VALUE, (pages + pagesPerChunk - 1) / pagesPerChunk);
        for (int i = 0; i < n; i++) {
            long from = i == 0 ? -1 : i * pagesPerChunk;
            long to = i == n - 1 ? -1 : (i + 1) * pagesPerChunk;
            out.add(new Chunk(r, i, n, from, to));
        }
        return out;
    }
}
