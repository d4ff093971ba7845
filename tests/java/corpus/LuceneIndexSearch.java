import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.List;

import org.apache.lucene.analysis.standard.StandardAnalyzer;
import org.apache.lucene.document.Document;
import org.apache.lucene.document.Field;
import org.apache.lucene.document.StringField;
import org.apache.lucene.document.TextField;
import org.apache.lucene.index.DirectoryReader;
import org.apache.lucene.index.IndexWriter;
import org.apache.lucene.index.IndexWriterConfig;
import org.apache.lucene.index.Term;
import org.apache.lucene.search.BooleanClause;
import org.apache.lucene.search.BooleanQuery;
import org.apache.lucene.search.IndexSearcher;
import org.apache.lucene.search.PhraseQuery;
import org.apache.lucene.search.TermQuery;
import org.apache.lucene.store.ByteBuffersDirectory;

/** Indexes one document per line of DOCS with THREADS threads sharing one
 *  IndexWriter (an in-heap ByteBuffersDirectory), then counts the hits of
 *  each query of QUERIES: "w" (term), "a b" (both terms), "\"a b\"" (phrase). */
public final class LuceneIndexSearch {
    public static void main(String[] args) throws Exception {
        List<String> docs = Files.readAllLines(Paths.get(args[0]), StandardCharsets.UTF_8);
        int threads = Integer.parseInt(args[1]);
        List<String> queries = Files.readAllLines(Paths.get(args[2]), StandardCharsets.UTF_8);
        ByteBuffersDirectory dir = new ByteBuffersDirectory();
        IndexWriterConfig cfg = new IndexWriterConfig(new StandardAnalyzer());
        cfg.setRAMBufferSizeMB(8);
        try (IndexWriter w = new IndexWriter(dir, cfg)) {
            Thread[] ts = new Thread[threads];
            Throwable[] failed = new Throwable[1];
            for (int t = 0; t < threads; t++) {
                final int me = t;
                ts[t] = new Thread(() -> {
                    try {
                        for (int i = me; i < docs.size(); i += threads) {
                            Document d = new Document();
                            d.add(new StringField("id", Integer.toString(i), Field.Store.YES));
                            d.add(new TextField("body", docs.get(i), Field.Store.YES));
                            w.addDocument(d);
                        }
                    } catch (Throwable e) {
                        synchronized (failed) { failed[0] = e; }
                    }
                }, "indexer-" + t);
                ts[t].start();
            }
            for (Thread t : ts) t.join();
            if (failed[0] != null) throw new RuntimeException(failed[0]);
            w.forceMerge(1);
        }
        try (DirectoryReader r = DirectoryReader.open(dir)) {
            IndexSearcher s = new IndexSearcher(r);
            System.out.println("docs " + r.numDocs());
            for (String q : queries) {
                int n;
                if (q.startsWith("\"")) {
                    String[] ws = q.substring(1, q.length() - 1).split(" ");
                    n = s.count(new PhraseQuery("body", ws));
                } else if (q.contains(" ")) {
                    BooleanQuery.Builder b = new BooleanQuery.Builder();
                    for (String x : q.split(" ")) b.add(new TermQuery(new Term("body", x)), BooleanClause.Occur.MUST);
                    n = s.count(b.build());
                } else {
                    n = s.count(new TermQuery(new Term("body", q)));
                }
                System.out.println("hits " + q + " " + n);
            }
        }
    }
}
