package io.millrace.sink.jsonl;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.channels.WritableByteChannel;

/**
 * A buffered stream onto the current events file that knows how many bytes it has taken since the
 * file began, so the sink knows each line's end offset without asking the file system. The sink
 * points it at the next file on rotation; it never closes the channel itself.
 */
final class ChannelOutput extends OutputStream {
    /** Direct: the channel writes it as it is (a heap buffer would be copied into a temporary direct one first). */
    private final ByteBuffer buf;
    private WritableByteChannel channel;
    private long position;

    ChannelOutput(int bufferSize) {
        this.buf = ByteBuffer.allocateDirect(bufferSize);
    }

    /** Continues writing to {@code channel}, whose current size (and write position) is {@code position}. */
    void target(WritableByteChannel channel, long position) {
        if (buf.position() != 0) {
            throw new IllegalStateException("switching files with " + buf.position() + " bytes not yet written");
        }
        this.channel = channel;
        this.position = position;
    }

    /** Offset in the current file after every byte taken so far (written or buffered). */
    long position() {
        return position;
    }

    @Override
    public void write(int b) throws IOException {
        if (!buf.hasRemaining()) {
            drain();
        }
        buf.put((byte) b);
        position++;
    }

    @Override
    public void write(byte[] b, int off, int n) throws IOException {
        int done = 0;
        while (done < n) {
            if (!buf.hasRemaining()) {
                drain();
            }
            int k = Math.min(n - done, buf.remaining());
            buf.put(b, off + done, k);
            done += k;
        }
        position += n;
    }

    /** Hands every buffered byte to the channel (to the OS; not yet to the disk). */
    @Override
    public void flush() throws IOException {
        drain();
    }

    @Override
    public void close() {
        // the sink owns the channel
    }

    private void drain() throws IOException {
        if (buf.position() > 0) {
            buf.flip();
            try {
                while (buf.hasRemaining()) {
                    channel.write(buf);
                }
            } finally {
                buf.clear(); // after a failed write the sink is failed; what was not written is cut at the next open
            }
        }
    }
}
