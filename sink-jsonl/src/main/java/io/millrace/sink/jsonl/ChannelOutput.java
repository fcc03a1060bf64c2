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
    private final byte[] buf;
    private int len;
    private WritableByteChannel channel;
    private long position;

    ChannelOutput(int bufferSize) {
        this.buf = new byte[bufferSize];
    }

    /** Continues writing to {@code channel}, whose current size (and write position) is {@code position}. */
    void target(WritableByteChannel channel, long position) {
        if (len != 0) {
            throw new IllegalStateException("switching files with " + len + " bytes not yet written");
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
        if (len == buf.length) {
            drain();
        }
        buf[len++] = (byte) b;
        position++;
    }

    @Override
    public void write(byte[] b, int off, int n) throws IOException {
        if (n >= buf.length) {
            drain();
            writeFully(ByteBuffer.wrap(b, off, n));
        } else {
            if (len + n > buf.length) {
                drain();
            }
            System.arraycopy(b, off, buf, len, n);
            len += n;
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
        if (len > 0) {
            writeFully(ByteBuffer.wrap(buf, 0, len));
            len = 0;
        }
    }

    private void writeFully(ByteBuffer bb) throws IOException {
        while (bb.hasRemaining()) {
            channel.write(bb);
        }
    }
}
