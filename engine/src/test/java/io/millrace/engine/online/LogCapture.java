package io.millrace.engine.online;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import org.slf4j.LoggerFactory;

import java.util.List;

/** The formatted messages logged under {@code io.millrace} while it is open. */
public final class LogCapture implements AutoCloseable {
    private final Logger logger = (Logger) LoggerFactory.getLogger("io.millrace");
    private final ListAppender<ILoggingEvent> appender = new ListAppender<>();

    public LogCapture() {
        appender.start();
        logger.addAppender(appender);
    }

    public List<String> lines() {
        synchronized (appender) { // AppenderBase.doAppend appends under the appender's lock
            return appender.list.stream().map(ILoggingEvent::getFormattedMessage).toList();
        }
    }

    public List<String> containing(String text) {
        return lines().stream().filter(l -> l.contains(text)).toList();
    }

    /**
     * The lines containing {@code text}, once there is one (up to 30 s): a reader logs a copy as landed after the
     * assembler emitted its last chunk, which is when the copy leaves {@code onlineSnapshots()}.
     */
    public List<String> awaitContaining(String text) throws InterruptedException {
        // 30 s: what a test waits for may come with the engine's next look at the catalog, every 10 s by default
        // (source.new_tables_poll_s), and the stream's round trip after it (CI's DdlIT missed one by 0.3 s at 10 s)
        long deadline = System.nanoTime() + 30_000_000_000L;
        List<String> found = containing(text);
        while (found.isEmpty() && System.nanoTime() < deadline) {
            Thread.sleep(10);
            found = containing(text);
        }
        return found;
    }

    @Override
    public void close() {
        logger.detachAppender(appender);
        appender.stop();
    }
}
