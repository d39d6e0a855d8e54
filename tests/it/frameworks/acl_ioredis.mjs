// ioredis with an ACL user: connect with a username as applications do,
// run what the user may, and see NOPERM for the rest.
//
// Usage: node acl_ioredis.mjs PORT. Prints "ACL IOREDIS OK" on success.
import Redis from "ioredis";

const port = Number(process.argv[2]);
const admin = new Redis({ port, host: "127.0.0.1", lazyConnect: true });
await admin.connect();
await admin.call("ACL", "SETUSER", "cache", "on", ">pw", "~cache:*", "+@read", "+@write", "-@dangerous", "+@connection", "+acl|whoami");
const user = new Redis({ port, host: "127.0.0.1", username: "cache", password: "pw", lazyConnect: true });
await user.connect();
if ((await user.call("ACL", "WHOAMI")) !== "cache") throw new Error("not the cache user");
await user.set("cache:a", "1");
if ((await user.get("cache:a")) !== "1") throw new Error("get");
let refused = 0;
for (const run of [() => user.flushall(), () => user.set("other", "1"), () => user.keys("*")]) {
  try {
    await run();
  } catch (e) {
    if (!String(e.message).startsWith("NOPERM")) throw e;
    refused += 1;
  }
}
if (refused !== 3) throw new Error(`refused ${refused} of 3`);
const bad = new Redis({ port, host: "127.0.0.1", username: "cache", password: "nope", lazyConnect: true, retryStrategy: () => null, maxRetriesPerRequest: 0 });
const errors = [];
bad.on("error", (e) => errors.push(String(e.message)));
try {
  await bad.connect();
  await bad.ping();
} catch (e) {
  errors.push(String(e.message));
}
const wrongpass = errors.some((m) => m.includes("WRONGPASS"));
bad.disconnect();
if (!wrongpass) throw new Error("a wrong password connected");
user.disconnect();
admin.disconnect();
console.log("ACL IOREDIS OK");
