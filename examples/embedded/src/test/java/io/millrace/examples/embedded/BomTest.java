package io.millrace.examples.embedded;

import org.junit.jupiter.api.Test;
import org.w3c.dom.Document;
import org.w3c.dom.Element;
import org.w3c.dom.Node;
import org.w3c.dom.NodeList;

import javax.xml.parsers.DocumentBuilderFactory;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/** The BOM lists every module of the reactor that is published (all but the benchmarks, the examples and itself), at the reactor's version. */
class BomTest {
    private static final Path ROOT = Path.of("../..");

    private static Document read(Path pom) throws Exception {
        return DocumentBuilderFactory.newInstance().newDocumentBuilder().parse(pom.toFile());
    }

    /** The text of {@code root}'s direct child {@code name}. */
    private static String child(Element root, String name) {
        for (Node n = root.getFirstChild(); n != null; n = n.getNextSibling()) {
            if (n instanceof Element e && e.getTagName().equals(name)) {
                return e.getTextContent().strip();
            }
        }
        return null;
    }

    @Test
    void theBomListsEveryPublishedModule() throws Exception {
        Element parent = read(ROOT.resolve("pom.xml")).getDocumentElement();
        List<String> published = new ArrayList<>();
        NodeList modules = parent.getElementsByTagName("module");
        for (int i = 0; i < modules.getLength(); i++) {
            String dir = modules.item(i).getTextContent().strip();
            if (dir.equals("bench") || dir.equals("bom") || dir.startsWith("examples/")) {
                continue;
            }
            published.add(child(read(ROOT.resolve(dir).resolve("pom.xml")).getDocumentElement(), "artifactId"));
        }
        Element bom = read(ROOT.resolve("bom/pom.xml")).getDocumentElement();
        assertThat(child(bom, "version")).as("the BOM's version is the reactor's").isEqualTo(child(parent, "version"));
        List<String> listed = new ArrayList<>();
        NodeList deps = bom.getElementsByTagName("dependency");
        for (int i = 0; i < deps.getLength(); i++) {
            Element d = (Element) deps.item(i);
            assertThat(child(d, "version")).isEqualTo("${project.version}");
            listed.add(child(d, "artifactId"));
        }
        assertThat(listed).containsExactlyInAnyOrderElementsOf(published);
    }
}
