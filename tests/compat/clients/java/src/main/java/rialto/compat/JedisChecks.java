package rialto.compat;

import static rialto.compat.ClientChecks.check;
import static rialto.compat.ClientChecks.eq;
import static rialto.compat.ClientChecks.expectError;
import static rialto.compat.ClientChecks.expectEvent;
import static rialto.compat.ClientChecks.expectNoEvent;
import static rialto.compat.ClientChecks.sha1Hex;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;

import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.JedisPubSub;
import redis.clients.jedis.Pipeline;
import redis.clients.jedis.Protocol;
import redis.clients.jedis.RedisProtocol;
import redis.clients.jedis.Response;
import redis.clients.jedis.Transaction;
import redis.clients.jedis.commands.ProtocolCommand;
import redis.clients.jedis.exceptions.JedisDataException;
import redis.clients.jedis.exceptions.JedisNoScriptException;

/**
 * Jedis 5 scenarios: transactions (MULTI/EXEC, WATCH, DISCARD, EXECABORT), pipelining, scripting
 * and pub/sub. Each runs twice: "resp2" is Jedis's default connection (no HELLO), "resp3" sends
 * HELLO 3.
 */
final class JedisChecks {
    /** A 2-key script: sets both keys from ARGV and returns what it stored plus #KEYS and #ARGV. */
    static final String SCRIPT = "redis.call('SET', KEYS[1], ARGV[1]) "
            + "redis.call('SET', KEYS[2], ARGV[2]) "
            + "return {redis.call('GET', KEYS[1]), redis.call('GET', KEYS[2]), #KEYS, #ARGV}";

    static void register(Map<String, ClientChecks.Scenario> m) {
        for (int proto : new int[] {2, 3}) {
            String sfx = "_resp" + proto;
            m.put("jedis_multi" + sfx, (h, p) -> multi(connect(h, p, proto)));
            m.put("jedis_watch" + sfx, (h, p) -> watch(connect(h, p, proto), connect(h, p, proto)));
            m.put("jedis_discard" + sfx, (h, p) -> discard(connect(h, p, proto)));
            m.put("jedis_execabort" + sfx, (h, p) -> execAbort(h, p, proto));
            m.put("jedis_pipeline" + sfx, (h, p) -> pipeline(connect(h, p, proto)));
            m.put("jedis_scripting" + sfx, (h, p) -> scripting(connect(h, p, proto)));
            m.put("jedis_pubsub" + sfx, (h, p) -> pubsub(connect(h, p, proto), connect(h, p, proto)));
        }
    }

    static Jedis connect(String host, int port, int proto) {
        DefaultJedisClientConfig.Builder cfg = DefaultJedisClientConfig.builder()
                .connectionTimeoutMillis(5000)
                .socketTimeoutMillis(5000);
        if (proto == 3) {
            cfg.protocol(RedisProtocol.RESP3);
        }
        Jedis j = new Jedis(new HostAndPort(host, port), cfg.build());
        eq("PONG", j.ping(), "PING on a new connection");
        return j;
    }

    static void multi(Jedis j) {
        try (j) {
            Transaction t = j.multi();
            Response<String> set = t.set("tx:a", "1");
            Response<Long> incr = t.incr("tx:a");
            Response<Long> incrBy = t.incrBy("tx:a", 10);
            Response<String> get = t.get("tx:a");
            Response<Boolean> missing = t.exists("tx:missing");
            List<Object> res = t.exec();
            check(res != null, "EXEC returned null (aborted) for an unwatched transaction");
            eq(Arrays.asList("OK", 2L, 12L, "12", false), res, "EXEC results");
            eq("OK", set.get(), "queued SET response");
            eq(2L, incr.get(), "queued INCR response");
            eq(12L, incrBy.get(), "queued INCRBY response");
            eq("12", get.get(), "queued GET response");
            eq(false, missing.get(), "queued EXISTS response");
            eq("12", j.get("tx:a"), "GET after EXEC");

            // An empty transaction, and a second one on the same connection.
            res = j.multi().exec();
            eq(List.of(), res, "EXEC of an empty transaction");
            t = j.multi();
            t.del("tx:a");
            t.rpush("tx:list", "x", "y");
            t.lrange("tx:list", 0, -1);
            eq(Arrays.asList(1L, 2L, List.of("x", "y")), t.exec(), "EXEC results of a second transaction");
            eq(false, j.exists("tx:a"), "EXISTS after a transaction deleted the key");
        }
    }

    static void watch(Jedis j, Jedis other) {
        try (j; other) {
            j.set("w:k", "0");
            eq("OK", j.watch("w:k"), "WATCH reply");
            other.set("w:k", "changed"); // touches the watched key from another connection
            Transaction t = j.multi();
            t.set("w:k", "mine");
            t.incr("w:side");
            List<Object> res = t.exec();
            // Jedis 5: exec() returns null when EXEC answers a null (the transaction was aborted).
            check(res == null || res.isEmpty(), "EXEC after a watched key changed must abort, got " + res);
            eq("changed", j.get("w:k"), "watched key after the aborted transaction");
            eq(null, j.get("w:side"), "key the aborted transaction would have written");

            // EXEC unwatches: the same transaction, unchallenged, commits.
            j.watch("w:k");
            t = j.multi();
            t.set("w:k", "mine");
            eq(List.of("OK"), t.exec(), "EXEC of an unchallenged watched transaction");
            eq("mine", j.get("w:k"), "watched key after commit");

            // UNWATCH forgets the watch: a later change no longer aborts.
            j.watch("w:k");
            eq("OK", j.unwatch(), "UNWATCH reply");
            other.set("w:k", "again");
            t = j.multi();
            t.set("w:k", "after-unwatch");
            eq(List.of("OK"), t.exec(), "EXEC after UNWATCH");

            // Deleting one of several watched keys from another connection also aborts.
            j.set("w:gone", "1");
            j.watch("w:gone", "w:k");
            other.del("w:gone");
            t = j.multi();
            t.set("w:k", "nope");
            res = t.exec();
            check(res == null || res.isEmpty(), "EXEC after another client deleted a watched key must abort, got " + res);
            eq("after-unwatch", j.get("w:k"), "key after the second aborted transaction");
        }
    }

    static void discard(Jedis j) {
        try (j) {
            j.set("d:k", "before");
            Transaction t = j.multi();
            t.set("d:k", "after");
            t.incr("d:n");
            eq("OK", t.discard(), "DISCARD reply");
            eq("before", j.get("d:k"), "key after DISCARD");
            eq(null, j.get("d:n"), "key only the discarded transaction wrote");
            // The connection is back to normal: a new transaction works.
            t = j.multi();
            t.set("d:k", "later");
            eq(List.of("OK"), t.exec(), "EXEC after a DISCARDed transaction");
            eq("later", j.get("d:k"), "key after the later transaction");
            expectError("DISCARD outside MULTI", "DISCARD without MULTI",
                    () -> j.sendCommand(Protocol.Command.DISCARD));
            expectError("EXEC outside MULTI", "EXEC without MULTI",
                    () -> j.sendCommand(Protocol.Command.EXEC));
        }
    }

    static void execAbort(String host, int port, int proto) {
        ProtocolCommand unknown = () -> "NOSUCHCOMMAND".getBytes(StandardCharsets.US_ASCII);
        // A queued command with the wrong number of arguments aborts the whole transaction.
        try (Jedis j = connect(host, port, proto)) {
            Transaction t = j.multi();
            t.set("ea:k", "1");
            t.sendCommand(Protocol.Command.SET, "ea:only-one-argument");
            t.incr("ea:n");
            String msg = expectError("EXEC after a wrong-arity command was queued", "EXECABORT", t::exec);
            check(msg.contains("previous errors"), "EXECABORT message: " + msg);
        }
        // So does an unknown command.
        try (Jedis j = connect(host, port, proto)) {
            Transaction t = j.multi();
            t.set("ea:k", "2");
            t.sendCommand(unknown, "x");
            expectError("EXEC after an unknown command was queued", "EXECABORT", t::exec);
        }
        try (Jedis j = connect(host, port, proto)) {
            eq(null, j.get("ea:k"), "key set by an aborted transaction");
            eq(null, j.get("ea:n"), "key set by an aborted transaction");
            // Errors at EXEC time (wrong type) do not abort: the other commands run.
            Transaction t = j.multi();
            t.set("ea:s", "abc");
            Response<Long> bad = t.incr("ea:s");
            t.set("ea:t", "ok");
            List<Object> res = t.exec();
            check(res != null && res.size() == 3, "EXEC with a runtime error must return 3 replies, got " + res);
            eq("OK", res.get(0), "first reply");
            check(res.get(1) instanceof JedisDataException
                            && String.valueOf(((JedisDataException) res.get(1)).getMessage()).contains("not an integer"),
                    "second reply must be the INCR error, got " + res.get(1));
            expectError("Response.get() of the failed INCR", "not an integer", bad::get);
            eq("ok", j.get("ea:t"), "key set after the failing command in the transaction");
        }
    }

    static void pipeline(Jedis j) {
        try (j) {
            Pipeline p = j.pipelined();
            List<Response<String>> sets = new ArrayList<>();
            for (int i = 0; i < 200; i++) {
                sets.add(p.set("pl:" + i, "v" + i));
            }
            Response<Long> incr = p.incr("pl:counter");
            Response<Object> bad = p.sendCommand(Protocol.Command.INCR, "pl:0"); // "v0" is no integer
            Response<Long> incr2 = p.incr("pl:counter");
            Response<List<String>> mget = p.mget("pl:0", "pl:199", "pl:none");
            Response<String> get = p.get("pl:100");
            Response<Long> dbsize = p.dbSize();
            p.sync();
            for (int i = 0; i < sets.size(); i++) {
                eq("OK", sets.get(i).get(), "pipelined SET #" + i);
            }
            eq(1L, incr.get(), "pipelined INCR");
            expectError("pipelined INCR of a non-integer", "not an integer", bad::get);
            eq(2L, incr2.get(), "pipelined INCR after an error reply");
            eq(Arrays.asList("v0", "v199", null), mget.get(), "pipelined MGET");
            eq("v100", get.get(), "pipelined GET");
            eq(201L, dbsize.get(), "pipelined DBSIZE");

            // syncAndReturnAll: the replies in order, errors in place.
            p = j.pipelined();
            p.set("pl:x", "1");
            p.incrBy("pl:x", 41);
            p.get("pl:x");
            p.del("pl:x", "pl:none");
            List<Object> all = p.syncAndReturnAll();
            eq(Arrays.asList("OK", 42L, "42", 1L), all, "syncAndReturnAll");
            eq("PONG", j.ping(), "PING after pipelines");
        }
    }

    static void scripting(Jedis j) {
        try (j) {
            Object r = j.eval(SCRIPT, 2, "ev:a", "ev:b", "x", "y");
            eq(Arrays.asList("x", "y", 2L, 2L), r, "EVAL of a 2-key script");
            eq("x", j.get("ev:a"), "key written by the script");
            r = j.eval(SCRIPT, List.of("ev:c", "ev:d"), List.of("p", "q"));
            eq(Arrays.asList("p", "q", 2L, 2L), r, "EVAL with key and argument lists");

            String sha = j.scriptLoad(SCRIPT);
            eq(sha1Hex(SCRIPT), sha, "SCRIPT LOAD returns the script's SHA1");
            eq(true, j.scriptExists(sha), "SCRIPT EXISTS of a loaded script");
            eq(List.of(true, false), j.scriptExists(sha, sha1Hex("return 0")), "SCRIPT EXISTS of two");
            r = j.evalsha(sha, 2, "ev:e", "ev:f", "1", "2");
            eq(Arrays.asList("1", "2", 2L, 2L), r, "EVALSHA");
            eq("2", j.get("ev:f"), "key written through EVALSHA");

            // Conversions: integer, status, nil, boolean, error replies.
            eq(7L, j.eval("return 7"), "EVAL integer");
            eq("OK", j.eval("return redis.status_reply('OK')"), "EVAL status reply");
            eq(null, j.eval("return nil"), "EVAL nil");
            eq(1L, j.eval("return true"), "EVAL true");
            eq(null, j.eval("return false"), "EVAL false");
            eq(Arrays.asList(1L, "two", Arrays.asList(3L, "four")), j.eval("return {1, 'two', {3, 'four'}}"),
                    "EVAL nested array");
            expectError("EVAL error_reply", "MYERR boom", () -> j.eval("return redis.error_reply('MYERR boom')"));
            j.set("ev:str", "abc");
            expectError("redis.call error inside a script", "WRONGTYPE",
                    () -> j.eval("return redis.call('LPUSH', KEYS[1], 'x')", 1, "ev:str"));

            // An unknown SHA: NOSCRIPT (Jedis maps it to JedisNoScriptException).
            try {
                j.evalsha(sha1Hex("return 'never loaded'"), 0);
                throw new ClientChecks.CheckFailed("EVALSHA of an unknown script succeeded");
            } catch (JedisNoScriptException e) {
                check(e.getMessage().startsWith("NOSCRIPT"), "NOSCRIPT message: " + e.getMessage());
            }
            eq("OK", j.scriptFlush(), "SCRIPT FLUSH");
            eq(false, j.scriptExists(sha), "SCRIPT EXISTS after SCRIPT FLUSH");
        }
    }

    static void pubsub(Jedis subConn, Jedis pub) throws Exception {
        try (subConn; pub) {
            BlockingQueue<String> events = new LinkedBlockingQueue<>();
            JedisPubSub sub = new JedisPubSub() {
                @Override
                public void onMessage(String channel, String message) {
                    events.add("message " + channel + " " + message);
                }

                @Override
                public void onPMessage(String pattern, String channel, String message) {
                    events.add("pmessage " + pattern + " " + channel + " " + message);
                }

                @Override
                public void onSubscribe(String channel, int count) {
                    events.add("subscribe " + channel + " " + count);
                }

                @Override
                public void onUnsubscribe(String channel, int count) {
                    events.add("unsubscribe " + channel + " " + count);
                }

                @Override
                public void onPSubscribe(String pattern, int count) {
                    events.add("psubscribe " + pattern + " " + count);
                }

                @Override
                public void onPUnsubscribe(String pattern, int count) {
                    events.add("punsubscribe " + pattern + " " + count);
                }
            };
            Throwable[] failure = new Throwable[1];
            Thread t = new Thread(() -> {
                try {
                    subConn.subscribe(sub, "ps:ch1", "ps:ch2"); // returns once nothing is subscribed
                } catch (Throwable e) {
                    failure[0] = e;
                    events.add("subscriber thread failed: " + ClientChecks.describe(e));
                }
            }, "jedis-subscriber");
            t.setDaemon(true);
            t.start();
            expectEvent(events, "subscribe ps:ch1 1");
            expectEvent(events, "subscribe ps:ch2 2");

            for (int i = 0; i < 20; i++) {
                String ch = i % 2 == 0 ? "ps:ch1" : "ps:ch2";
                eq(1L, pub.publish(ch, "m" + i), "PUBLISH " + ch + " receivers");
            }
            for (int i = 0; i < 20; i++) {
                expectEvent(events, "message " + (i % 2 == 0 ? "ps:ch1" : "ps:ch2") + " m" + i);
            }
            eq(0L, pub.publish("ps:nobody", "x"), "PUBLISH to a channel nobody listens on");
            // Binary-safe payloads with spaces and non-ASCII.
            eq(1L, pub.publish("ps:ch1", "hello wörld \t!"), "PUBLISH of a non-ASCII payload");
            expectEvent(events, "message ps:ch1 hello wörld \t!");

            sub.psubscribe("ps:ch*");
            expectEvent(events, "psubscribe ps:ch* 3");
            // ps:ch1 now has a channel subscriber and a matching pattern (on the same connection):
            // two deliveries, channel first.
            eq(2L, pub.publish("ps:ch1", "both"), "PUBLISH receivers with a channel and a pattern subscription");
            expectEvent(events, "message ps:ch1 both");
            expectEvent(events, "pmessage ps:ch* ps:ch1 both");
            eq(1L, pub.publish("ps:chX", "pat"), "PUBLISH to a channel only the pattern matches");
            expectEvent(events, "pmessage ps:ch* ps:chX pat");

            sub.unsubscribe("ps:ch1");
            expectEvent(events, "unsubscribe ps:ch1 2");
            eq(1L, pub.publish("ps:ch1", "after-unsub"), "PUBLISH after UNSUBSCRIBE (pattern still matches)");
            expectEvent(events, "pmessage ps:ch* ps:ch1 after-unsub");
            sub.punsubscribe();
            expectEvent(events, "punsubscribe ps:ch* 1");
            eq(1L, pub.publish("ps:ch2", "last"), "PUBLISH to the remaining channel");
            expectEvent(events, "message ps:ch2 last");
            sub.unsubscribe();
            expectEvent(events, "unsubscribe ps:ch2 0");
            t.join(ClientChecks.EVENT_TIMEOUT_MS);
            check(!t.isAlive(), "subscribe() did not return after the last UNSUBSCRIBE");
            check(failure[0] == null, "subscriber failed: " + failure[0]);
            expectNoEvent(events, 0);
            eq(0L, pub.publish("ps:ch2", "nobody"), "PUBLISH after everything was unsubscribed");
            // The connection is an ordinary one again.
            eq("PONG", subConn.ping(), "PING on the former subscriber connection");
            subConn.set("ps:k", "v");
            eq("v", subConn.get("ps:k"), "GET on the former subscriber connection");
        }
    }

    private JedisChecks() {}
}
