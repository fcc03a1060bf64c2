package io.millrace.core;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** {@link Secret#scrub}: the secret as a word of its own is hidden; text that merely holds its characters stays whole. */
class SecretTest {
    @Test
    void aSecretEchoedInAMessageIsHiddenAndWordsThatHoldItsCharactersAreNot() {
        // a user's destination with the password "x": before, 'does not e******ist'
        assertEquals("FATAL: database \"nodb\" does not exist", Secret.of("x").scrub("FATAL: database \"nodb\" does not exist"));
        assertEquals("password=****** for user x1", Secret.of("x").scrub("password=x for user x1"));
        assertEquals("url ?password=******&ssl=true", Secret.of("s3cr$t!").scrub("url ?password=s3cr$t!&ssl=true"));
        assertEquals("'******' and ******", Secret.of("hunter2").scrub("'hunter2' and hunter2"));
        assertEquals("nothing to hide", Secret.NONE.scrub("nothing to hide"));
    }
}
