package io.millrace.engine.online;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import org.slf4j.LoggerFactory;

import java.util.List;

/** The formatted messages logged under {@code io.millrace} while it is open. */
final class LogCapture implements AutoCloseable {
    private final Logger logger = (Logger) LoggerFactory.getLogger("io.millrace");
    private final ListAppender<ILoggingEvent> appender = new ListAppender<>();

    LogCapture() {
        appender.start();
        logger.addAppender(appender);
    }

    List<String> lines() {
        synchronized (appender) { // AppenderBase.doAppend appends under the appender's lock
            return appender.list.stream().map(ILoggingEvent::getFormattedMessage).toList();
        }
    }

    List<String> containing(String text) {
        return lines().stream().filter(l -> l.contains(text)).toList();
    }

    @Override
    public void close() {
        logger.detachAppender(appender);
        appender.stop();
    }
}
