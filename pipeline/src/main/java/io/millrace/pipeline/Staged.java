package io.millrace.pipeline;

/**
 * What the writer takes from its channel, in order: a batch that is ready, or one whose rows the
 * decoder pool is still decoding. The channel's FIFO order is the batch sequence (INV: ORDER); the
 * writer waits for the head, never for a later one.
 */
interface Staged {
    /**
     * The batch, once every row in it is decoded. Writer thread.
     *
     * @throws Channel.Stopped when the pipeline stops (or a decoder failed: its error is in {@link Failure})
     *                         before the batch is complete
     */
    Batch await() throws Channel.Stopped, InterruptedException;

    /** A batch that needs no decoding. */
    static Staged ready(Batch b) {
        return () -> b;
    }
}
