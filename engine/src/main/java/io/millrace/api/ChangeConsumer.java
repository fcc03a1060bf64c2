package io.millrace.api;

import java.util.List;

/**
 * Receives the captured changes, batch by batch, at least once. Set with {@link Millrace.Builder#changeConsumer}.
 *
 * <p>Delivery: batches arrive in source order (INV: ORDER), one at a time, on one engine thread. A batch is
 * acknowledged when {@link #accept} returns: its position is then stored (in the consumer's checkpoint file) and the
 * source may discard the WAL it came from. When the engine stops before storing it (a crash, a kill) the changes since
 * the last stored position are delivered again after the restart, each with the {@link Change#position() position} it
 * had the first time, so that repeats can be recognised. When {@code accept} throws, nothing of the batch is
 * acknowledged. An exception caused by a lost connection ({@code java.net.ConnectException}, {@code SocketException},
 * {@code SocketTimeoutException}, {@code EOFException}, an {@code SQLException} of SQLSTATE class 08, or 40001, 40P01,
 * 53300, ...) is transient: the engine starts again after a backoff ({@link OperationsSettings}) and delivers the batch
 * again. Any other exception stops the engine with the error ({@link Millrace#await()} throws it).
 *
 * <p>For exactly-once delivery, store the position with your own data: {@link TransactionalConsumer}.
 */
@FunctionalInterface
public interface ChangeConsumer {

    /**
     * Handles one batch; never empty. Return only when the batch is done with (written, sent, processed): returning
     * acknowledges it.
     *
     * @throws Exception to refuse the batch, which stops the engine, or restarts it for a lost connection (see above); the
     *                   batch is delivered again at the next start
     */
    void accept(List<Change> batch) throws Exception;
}
