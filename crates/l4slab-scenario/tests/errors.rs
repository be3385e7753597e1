//! One case per validation error: each message names its key path and
//! carries an example (or the list of valid choices).

mod common;

use common::{parse, parse_set, BASE};
use l4slab_scenario::{parse_file, Problem, ScenarioError};

/// An error case: scenario text, `--set` overrides, expected key path, kind,
/// and a fragment of the message.
struct Case {
    text: &'static str,
    sets: &'static [&'static str],
    path: &'static str,
    problem: Problem,
    fragment: &'static str,
}

const fn set(
    sets: &'static [&'static str],
    path: &'static str,
    problem: Problem,
    fragment: &'static str,
) -> Case {
    Case {
        text: BASE,
        sets,
        path,
        problem,
        fragment,
    }
}

const fn text(
    text: &'static str,
    path: &'static str,
    problem: Problem,
    fragment: &'static str,
) -> Case {
    Case {
        text,
        sets: &[],
        path,
        problem,
        fragment,
    }
}

use Problem::*;

const NO_FORMAT: &str = "duration = \"10s\"\n[bottleneck]\nrate = \"1Mbit\"\ndelay = \"1ms\"\nbuffer = \"10pkt\"\n[[flows]]\n";
const NO_DURATION: &str =
    "format = 1\n[bottleneck]\nrate = \"1Mbit\"\ndelay = \"1ms\"\nbuffer = \"10pkt\"\n[[flows]]\n";
const NO_BOTTLENECK: &str = "format = 1\nduration = \"10s\"\n[[flows]]\n";
const NO_FLOWS: &str = "format = 1\nduration = \"10s\"\n[bottleneck]\nrate = \"1Mbit\"\ndelay = \"1ms\"\nbuffer = \"10pkt\"\n";
const EMPTY_FLOWS: &str = "format = 1\nduration = \"10s\"\nflows = []\n[bottleneck]\nrate = \"1Mbit\"\ndelay = \"1ms\"\nbuffer = \"10pkt\"\n";
const NO_RATE: &str = "format = 1\nduration = \"10s\"\n[bottleneck]\ndelay = \"1ms\"\nbuffer = \"10pkt\"\n[[flows]]\n";
const UP_RATE_MISSING: &str = "format = 1\nduration = \"10s\"\n[bottleneck]\ndelay = \"1ms\"\nbuffer = \"10pkt\"\ndown.rate = \"5Mbit\"\n[[flows]]\n";
const NO_DELAY: &str = "format = 1\nduration = \"10s\"\n[bottleneck]\nrate = \"1Mbit\"\nbuffer = \"10pkt\"\n[[flows]]\n";
const NO_BUFFER: &str =
    "format = 1\nduration = \"10s\"\n[bottleneck]\nrate = \"1Mbit\"\ndelay = \"1ms\"\n[[flows]]\n";
const BAD_HOST_NAME: &str = "format = 1\nduration = \"10s\"\n[bottleneck]\nrate = \"1Mbit\"\ndelay = \"1ms\"\nbuffer = \"10pkt\"\n[hosts.\"my laptop\"]\nside = \"client\"\n[[flows]]\n";
const TWO_CLIENTS: &str = "format = 1\nduration = \"10s\"\n[bottleneck]\nrate = \"1Mbit\"\ndelay = \"1ms\"\nbuffer = \"10pkt\"\n[hosts.a]\nside = \"client\"\n[hosts.b]\nside = \"client\"\n[[flows]]\n";
const TWO_SERVERS: &str = "format = 1\nduration = \"10s\"\n[bottleneck]\nrate = \"1Mbit\"\ndelay = \"1ms\"\nbuffer = \"10pkt\"\n[hosts.s1]\nside = \"server\"\n[hosts.s2]\nside = \"server\"\n[[flows]]\n";
const CLIENT_IS_SERVER: &str = "format = 1\nduration = \"10s\"\n[bottleneck]\nrate = \"1Mbit\"\ndelay = \"1ms\"\nbuffer = \"10pkt\"\n[hosts.client]\nside = \"server\"\n[[flows]]\n";
const DUP_NAMES: &str = "format = 1\nduration = \"10s\"\n[bottleneck]\nrate = \"1Mbit\"\ndelay = \"1ms\"\nbuffer = \"10pkt\"\n[[flows]]\nname = \"a\"\n[[flows]]\nname = \"a\"\n";
const DUP_EXPANDED: &str = "format = 1\nduration = \"10s\"\n[bottleneck]\nrate = \"1Mbit\"\ndelay = \"1ms\"\nbuffer = \"10pkt\"\n[[flows]]\nname = \"a.1\"\n[[flows]]\nname = \"a\"\ncount = 2\n";

const CASES: &[Case] = &[
    // top level
    text(NO_FORMAT, "format", Missing, "format: missing; write e.g. format = 1"),
    set(&["format=2"], "format", Unsupported, "format: unsupported version 2; this l4slab reads format = 1"),
    set(&["format=\"1\""], "format", WrongType, "expected an integer, found a string (\"1\"); write e.g. 1"),
    set(&["rtt=1"], "rtt", UnknownKey, "valid keys here: format, name, description, duration, warmup, seed, sample_interval, packet_trace, pcap, bottleneck, wifi, hosts, flows, households, sweep"),
    set(&["name=\"\""], "name", BadValue, "must not be empty"),
    set(&["name=5"], "name", WrongType, "expected a string, found an integer (5)"),
    set(&["description=true"], "description", WrongType, "expected a string"),
    text(NO_DURATION, "duration", Missing, "duration: missing; write e.g. duration = \"30s\""),
    set(&["duration=fast"], "duration", BadValue, "\"fast\" is not a duration; write e.g. \"30s\""),
    set(&["duration=30"], "duration", BadValue, "30 has no unit"),
    set(&["duration=0s"], "duration", BadValue, "must be greater than zero"),
    set(&["duration=30m"], "duration", BadValue, "unknown duration unit 'm'"),
    set(&["duration={ s = 1 }"], "duration", WrongType, "expected a duration as a string, found a table"),
    set(&["warmup=10s"], "warmup", Conflict, "warmup: 10s leaves no window to measure: it must be shorter than the run (duration = 10s); write e.g. \"5s\""),
    set(&["warmup=1min"], "warmup", Conflict, "60s leaves no window to measure"),
    set(&["warmup=fast"], "warmup", BadValue, "warmup: \"fast\" is not a duration; write e.g. \"5s\""),
    set(&["warmup=-1s"], "warmup", BadValue, "is negative"),
    set(&["warmup=5"], "warmup", BadValue, "5 has no unit"),
    set(&["seed=-1"], "seed", BadValue, "-1 is out of range; must be at least 0"),
    set(&["seed=one"], "seed", WrongType, "expected an integer"),
    set(&["sample_interval=0ms"], "sample_interval", BadValue, "must be greater than zero"),
    set(&["sample_interval=1min"], "sample_interval", Conflict, "60s is longer than the run (duration = 10s); write e.g. \"100ms\""),
    set(&["packet_trace=yes"], "packet_trace", WrongType, "expected true or false"),
    set(&["pcap=1"], "pcap", WrongType, "expected true or false"),
    // bottleneck
    text(NO_BOTTLENECK, "bottleneck", Missing, "bottleneck: missing; write e.g. [bottleneck] with rate ="),
    set(&["bottleneck=5"], "bottleneck", WrongType, "expected a table, found an integer (5)"),
    set(&["bottleneck.rtt=20ms"], "bottleneck.rtt", UnknownKey, "bottleneck.rtt: unknown key; valid keys here: rate, delay, buffer, qdisc, loss, ecn_rewrite, down, up"),
    set(&["bottleneck.down.x=1"], "bottleneck.down.x", UnknownKey, "valid keys here: rate, delay, buffer, qdisc, loss"),
    set(&["bottleneck.up=fast"], "bottleneck.up", WrongType, "expected a table"),
    set(&["bottleneck.rate=fast"], "bottleneck.rate", BadValue, "bottleneck.rate: \"fast\" is not a rate; write e.g. \"20Mbit\""),
    set(&["bottleneck.down.rate=fast"], "bottleneck.down.rate", BadValue, "bottleneck.down.rate: \"fast\" is not a rate; write e.g. \"20Mbit\""),
    set(&["bottleneck.up.rate=20"], "bottleneck.up.rate", BadValue, "20 has no unit"),
    set(&["bottleneck.rate=0Mbit"], "bottleneck.rate", BadValue, "must be greater than zero"),
    set(&["bottleneck.rate=20Mbyte"], "bottleneck.rate", BadValue, "unknown rate unit 'Mbyte'"),
    set(&["bottleneck.rate=-1Mbit"], "bottleneck.rate", BadValue, "is negative"),
    set(&["bottleneck.rate=1e30Gbit"], "bottleneck.rate", BadValue, "is too large"),
    text(NO_RATE, "bottleneck.down.rate", Missing, "bottleneck.down.rate: missing; write e.g. rate = \"20Mbit\" under [bottleneck] (both directions) or [bottleneck.down]"),
    text(UP_RATE_MISSING, "bottleneck.up.rate", Missing, "or [bottleneck.up]"),
    text(NO_DELAY, "bottleneck.down.delay", Missing, "write e.g. delay = \"10ms\""),
    set(&["bottleneck.delay=-1ms"], "bottleneck.delay", BadValue, "is negative"),
    text(NO_BUFFER, "bottleneck.down.buffer", Missing, "write e.g. buffer = \"100pkt\""),
    set(&["bottleneck.buffer=0pkt"], "bottleneck.buffer", BadValue, "must hold at least 1 packet"),
    set(&["bottleneck.buffer=1000B"], "bottleneck.buffer", BadValue, "1000 B holds no full-size packet"),
    set(&["bottleneck.buffer=1.5pkt"], "bottleneck.buffer", BadValue, "not a whole number of packets"),
    set(&["bottleneck.buffer=100"], "bottleneck.buffer", BadValue, "100 has no unit"),
    set(&["bottleneck.up.buffer=100p"], "bottleneck.up.buffer", BadValue, "unknown buffer unit 'p'"),
    set(&["bottleneck.buffer=5000000000pkt"], "bottleneck.buffer", BadValue, "packets is too many"),
    // qdisc
    set(&["bottleneck.qdisc=x"], "bottleneck.qdisc", UnknownName, "bottleneck.qdisc: unknown qdisc 'x'; choose one of: fifo, codel, fq_codel, pie, fq_pie, dualpi2, red"),
    set(&["bottleneck.qdisc={ head_drop = true }"], "bottleneck.qdisc.kind", Missing, "missing; write e.g. kind = \"fifo\""),
    set(&["bottleneck.qdisc={ kind = 5 }"], "bottleneck.qdisc.kind", WrongType, "expected a string"),
    set(&["bottleneck.qdisc={ kind = \"fifo\", limit = 5 }"], "bottleneck.qdisc.limit", UnknownKey, "valid keys here: kind, head_drop"),
    set(&["bottleneck.qdisc={ kind = \"fifo\", head_drop = \"yes\" }"], "bottleneck.qdisc.head_drop", WrongType, "expected true or false"),
    set(&["bottleneck.qdisc=5"], "bottleneck.qdisc", WrongType, "expected a name or a table with `kind`, found an integer (5); write e.g. \"fifo\""),
    // loss
    set(&["bottleneck.loss=150%"], "bottleneck.loss", BadValue, "is more than 100%; write e.g. \"1%\""),
    set(&["bottleneck.loss=-1%"], "bottleneck.loss", BadValue, "is negative"),
    set(&["bottleneck.loss=1"], "bottleneck.loss", BadValue, "1 is ambiguous"),
    set(&["bottleneck.loss=1.5"], "bottleneck.loss", BadValue, "more than 100%"),
    set(&["bottleneck.loss=\"1\""], "bottleneck.loss", BadValue, "has no unit"),
    set(&["bottleneck.loss=true"], "bottleneck.loss", WrongType, "expected a percentage"),
    set(&["bottleneck.up.loss=1 percent"], "bottleneck.up.loss", BadValue, "unknown percentage unit 'percent'"),
    set(&["bottleneck.loss={ kind = \"x\" }"], "bottleneck.loss.kind", UnknownName, "unknown loss model 'x'; choose one of: none, bernoulli, gilbert_elliott"),
    set(&["bottleneck.loss={ p = \"1%\" }"], "bottleneck.loss.kind", Missing, "write e.g. kind = \"bernoulli\""),
    set(&["bottleneck.loss={ kind = \"bernoulli\" }"], "bottleneck.loss.p", Missing, "write e.g. p = \"1%\""),
    set(&["bottleneck.loss={ kind = \"bernoulli\", p = \"2\" }"], "bottleneck.loss.p", BadValue, "has no unit"),
    set(&["bottleneck.loss={ kind = \"bernoulli\", p = \"1%\", r = \"1%\" }"], "bottleneck.loss.r", UnknownKey, "valid keys here: kind, p, ecn"),
    set(&["bottleneck.loss={ kind = \"gilbert_elliott\", p = \"1%\" }"], "bottleneck.loss.r", Missing, "write e.g. r = \"30%\""),
    set(&["bottleneck.loss={ kind = \"gilbert_elliott\", r = \"1%\" }"], "bottleneck.loss.p", Missing, "write e.g. p = \"1%\""),
    set(&["bottleneck.loss={ kind = \"gilbert_elliott\", p = \"1%\", r = \"30%\", k = \"200%\" }"], "bottleneck.loss.k", BadValue, "more than 100%; write e.g. 1.0"),
    set(&["bottleneck.loss={ kind = \"gilbert_elliott\", p = \"1%\", r = \"30%\", h = -0.5 }"], "bottleneck.loss.h", BadValue, "is negative; write e.g. 0.0"),
    set(&["bottleneck.loss={ kind = \"gilbert_elliott\", p = \"1%\", r = \"30%\", q = 1 }"], "bottleneck.loss.q", UnknownKey, "valid keys here: kind, p, r, k, h, ecn"),
    set(&["bottleneck.loss={ kind = \"bernoulli\", p = \"1%\", ecn = \"yes\" }"], "bottleneck.loss.ecn", WrongType, "expected true or false"),
    set(&["bottleneck.up.loss={ kind = \"gilbert_elliott\", p = \"1%\", r = \"30%\", ecn = 1 }"], "bottleneck.up.loss.ecn", WrongType, "expected true or false"),
    set(&["bottleneck.loss={ kind = \"none\", ecn = true }"], "bottleneck.loss.ecn", UnknownKey, "valid keys here: kind"),
    set(&["bottleneck.loss={ kind = \"none\", p = \"1%\" }"], "bottleneck.loss.p", UnknownKey, "valid keys here: kind"),
    // hosts
    set(&["hosts=5"], "hosts", WrongType, "expected a table"),
    set(&["hosts.laptop.access_delay=2ms"], "hosts.laptop.side", Missing, "hosts.laptop.side: missing; write e.g. side = \"client\""),
    set(&["hosts.laptop.side=middle"], "hosts.laptop.side", UnknownName, "unknown side 'middle'; choose one of: client, server"),
    set(&["hosts.laptop.side=client", "hosts.laptop.access_delay=fast"], "hosts.laptop.access_delay", BadValue, "\"fast\" is not a duration; write e.g. \"2ms\""),
    set(&["hosts.laptop.side=client", "hosts.laptop.rtt=1"], "hosts.laptop.rtt", UnknownKey, "valid keys here: side, access_delay, access, wifi"),
    // a host's access link
    set(&["hosts.laptop.side=client", "hosts.laptop.access=50Mbit"], "hosts.laptop.access", WrongType, "expected a table, found a string (\"50Mbit\"); write e.g. [hosts.laptop.access] with rate = \"50Mbit\", buffer = \"100pkt\""),
    set(&["hosts.laptop.side=client", "hosts.laptop.access.buffer=100pkt"], "hosts.laptop.access.rate", Missing, "hosts.laptop.access.rate: missing; write e.g. rate = \"50Mbit\" under [hosts.laptop.access] (both directions), [hosts.laptop.access.down] or [hosts.laptop.access.up]; an access link needs a rate"),
    set(&["hosts.laptop.side=client", "hosts.laptop.access.rate=50Mbit"], "hosts.laptop.access.down.buffer", Missing, "write e.g. buffer = \"100pkt\" under [hosts.laptop.access] (both directions) or [hosts.laptop.access.down]"),
    set(&["hosts.laptop.side=client", "hosts.laptop.access.buffer=100pkt", "hosts.laptop.access.up.rate=5Mbit", "hosts.laptop.access.down.qdisc=codel"], "hosts.laptop.access.down.rate", Missing, "write e.g. rate = \"20Mbit\" under [hosts.laptop.access] (both directions) or [hosts.laptop.access.down]"),
    set(&["hosts.laptop.side=client", "hosts.laptop.access.rate=fast", "hosts.laptop.access.buffer=100pkt"], "hosts.laptop.access.rate", BadValue, "\"fast\" is not a rate; write e.g. \"20Mbit\""),
    set(&["hosts.laptop.side=client", "hosts.laptop.access.rate=50Mbit", "hosts.laptop.access.up.rate=0bit", "hosts.laptop.access.buffer=100pkt"], "hosts.laptop.access.up.rate", BadValue, "must be greater than zero"),
    set(&["hosts.laptop.side=client", "hosts.laptop.access.rate=50Mbit", "hosts.laptop.access.buffer=0pkt"], "hosts.laptop.access.buffer", BadValue, "must hold at least 1 packet"),
    set(&["hosts.laptop.side=client", "hosts.laptop.access.rate=50Mbit", "hosts.laptop.access.buffer=100pkt", "hosts.laptop.access.delay=5ms"], "hosts.laptop.access.delay", UnknownKey, "valid keys here: rate, buffer, qdisc, loss, ecn_rewrite, down, up"),
    set(&["hosts.laptop.side=client", "hosts.laptop.access.rate=50Mbit", "hosts.laptop.access.buffer=100pkt", "hosts.laptop.access.up.delay=5ms"], "hosts.laptop.access.up.delay", UnknownKey, "valid keys here: rate, buffer, qdisc, loss, ecn_rewrite"),
    set(&["hosts.laptop.side=client", "hosts.laptop.access.rate=50Mbit", "hosts.laptop.access.buffer=100pkt", "hosts.laptop.access.up=fast"], "hosts.laptop.access.up", WrongType, "expected a table, found a string (\"fast\"); write e.g. [hosts.laptop.access.up] with rate = \"10Mbit\""),
    set(&["hosts.laptop.side=client", "hosts.laptop.access.rate=50Mbit", "hosts.laptop.access.buffer=100pkt", "hosts.laptop.access.qdisc=sfq"], "hosts.laptop.access.qdisc", UnknownName, "unknown qdisc 'sfq'; choose one of: fifo, codel, fq_codel, pie, fq_pie, dualpi2, red"),
    set(&["hosts.laptop.side=client", "hosts.laptop.access.rate=50Mbit", "hosts.laptop.access.buffer=100pkt", "hosts.laptop.access.up.qdisc={ target = \"5ms\" }"], "hosts.laptop.access.up.qdisc.kind", Missing, "write e.g. kind = \"codel\""),
    set(&["hosts.laptop.side=client", "hosts.laptop.access.rate=50Mbit", "hosts.laptop.access.buffer=100pkt", "hosts.laptop.access.qdisc={ kind = \"codel\", target = \"soon\" }"], "hosts.laptop.access.qdisc.target", BadValue, "\"soon\" is not a duration"),
    set(&["hosts.laptop.side=client", "hosts.laptop.access.rate=50Mbit", "hosts.laptop.access.buffer=100pkt", "hosts.laptop.access.loss=150%"], "hosts.laptop.access.loss", BadValue, "is more than 100%"),
    set(&["hosts.laptop.side=client", "hosts.laptop.access.rate=50Mbit", "hosts.laptop.access.buffer=100pkt", "hosts.laptop.access.ecn_rewrite=scramble"], "hosts.laptop.access.ecn_rewrite", UnknownName, "unknown ECN rewrite 'scramble'"),
    set(&["hosts.laptop.side=client", "hosts.laptop.access.rate=50Mbit", "hosts.laptop.access.buffer=100pkt", "hosts.laptop.access.up.qdisc={ kind = \"dualpi2\", l_flows = [\"nobody\"] }"], "hosts.laptop.access.up.qdisc.l_flows[0]", UnknownName, "unknown flow 'nobody'; choose one of: flow0"),
    set(&["hosts.laptop=5"], "hosts.laptop", WrongType, "expected a table"),
    text(BAD_HOST_NAME, "hosts.my laptop", BadValue, "\"my laptop\" is not a valid name"),
    text(CLIENT_IS_SERVER, "hosts.client", Conflict, "there is no client-side host"),
    // flows
    text(NO_FLOWS, "flows", Missing, "flows: missing; write e.g. [[flows]] with cc = \"reno\""),
    text(EMPTY_FLOWS, "flows", Missing, "write e.g. [[flows]]"),
    set(&["flows=5"], "flows", WrongType, "expected an array"),
    set(&["flows[0].rtt=5"], "flows[0].rtt", UnknownKey, "valid keys here: name, client, server, direction, cc, start, count, stagger, app, transport"),
    set(&["flows[1].cc=reno", "flows[1].x=1"], "flows[1].x", UnknownKey, "valid keys here"),
    set(&["flows[0].name=a b"], "flows[0].name", BadValue, "is not a valid name"),
    text(DUP_NAMES, "flows[1].name", Conflict, "flow name 'a' is already used by flows[0]"),
    text(DUP_EXPANDED, "flows[1].name", Conflict, "flow name 'a.1' is already used by flows[0]"),
    set(&["flows[0].count=0"], "flows[0].count", BadValue, "0 is out of range; must be between 1 and 100000; write e.g. 4"),
    set(&["flows[0].count=2.5"], "flows[0].count", WrongType, "expected an integer"),
    set(&["flows[0].client=nobody"], "flows[0].client", UnknownName, "unknown host 'nobody'; choose one of: client, server"),
    set(&["flows[0].client=server"], "flows[0].client", Conflict, "host 'server' is not on the client side; choose one of: client"),
    set(&["flows[0].server=client"], "flows[0].server", Conflict, "host 'client' is not on the server side; choose one of: server"),
    text(TWO_CLIENTS, "flows[0].client", Conflict, "missing, and there are 2 client-side hosts to choose from: a, b; write e.g. client = \"a\""),
    text(TWO_SERVERS, "flows[0].server", Conflict, "2 server-side hosts to choose from: s1, s2"),
    set(&["flows[0].direction=sideways"], "flows[0].direction", UnknownName, "unknown direction 'sideways'; choose one of: down, up"),
    set(&["flows[0].cc=foo"], "flows[0].cc", UnknownName, "flows[0].cc: unknown congestion control 'foo'; choose one of: reno, cubic"),
    set(&["flows[0].start=40s"], "flows[0].start", Conflict, "40s is not before the end of the run (duration = 10s); write e.g. \"0s\""),
    set(&["duration=30s", "flows[0].start=30s"], "flows[0].start", Conflict, "30s is not before the end of the run (duration = 30s)"),
    set(&["flows[0].start=soon"], "flows[0].start", BadValue, "\"soon\" is not a duration"),
    // apps
    set(&["flows[0].app=web"], "flows[0].app.objects", Missing, "write e.g. app = { kind = \"web\", objects = [{ size = \"20KB\", at = \"0s\" }] }"),
    set(&["flows[0].app={ kind = \"web\" }"], "flows[0].app.objects", Missing, "write e.g. objects = [{ size = \"20KB\", at = \"5s\" }]"),
    set(&["flows[0].app={ kind = \"web\", objects = [] }"], "flows[0].app.objects", BadValue, "lists no objects; a page has at least one"),
    set(&["flows[0].app={ kind = \"web\", objects = \"20KB\" }"], "flows[0].app.objects", WrongType, "expected an array of tables, found a string"),
    set(&["flows[0].app={ kind = \"web\", objects = [5] }"], "flows[0].app.objects[0]", WrongType, "expected a table"),
    set(&["flows[0].app={ kind = \"web\", objects = [{ at = \"1s\" }] }"], "flows[0].app.objects[0].size", Missing, "write e.g. size = \"20KB\""),
    set(&["flows[0].app={ kind = \"web\", objects = [{ size = \"1MB\" }, { size = \"0B\" }] }"], "flows[0].app.objects[1].size", BadValue, "must be greater than zero; write e.g. \"20KB\""),
    set(&["flows[0].app={ kind = \"web\", objects = [{ size = \"1MB\", at = \"soon\" }] }"], "flows[0].app.objects[0].at", BadValue, "\"soon\" is not a duration; write e.g. \"5s\""),
    set(&["flows[0].app={ kind = \"web\", objects = [{ size = \"1MB\" }, { size = \"1KB\", at = \"10s\" }] }"], "flows[0].app.objects[1].at", Conflict, "asked for at 10s (flow start + at), not before the end of the run (duration = 10s); write e.g. \"5s\""),
    set(&["flows[0].start=4s", "flows[0].app={ kind = \"web\", objects = [{ size = \"1KB\", at = \"6s\" }] }"], "flows[0].app.objects[0].at", Conflict, "asked for at 10s"),
    set(&["flows[0].app={ kind = \"web\", objects = [{ size = \"1MB\", connection = \"fresh\" }] }"], "flows[0].app.objects[0].connection", UnknownName, "unknown connection 'fresh'; choose one of: existing, new"),
    set(&["flows[0].app={ kind = \"web\", connection = \"reuse\", objects = [{ size = \"1MB\" }] }"], "flows[0].app.connection", UnknownName, "choose one of: existing, new"),
    set(&["flows[0].app={ kind = \"web\", connection = true, objects = [{ size = \"1MB\" }] }"], "flows[0].app.connection", WrongType, "expected a string, found a boolean (true); write e.g. \"existing\""),
    set(&["flows[0].app={ kind = \"web\", objects = [{ size = \"1MB\", url = \"/\" }] }"], "flows[0].app.objects[0].url", UnknownKey, "valid keys here: size, at, connection"),
    set(&["flows[0].app={ kind = \"web\", request_size = \"0B\", objects = [{ size = \"1MB\" }] }"], "flows[0].app.request_size", BadValue, "must be greater than zero; write e.g. \"500B\""),
    set(&["flows[0].app={ kind = \"web\", size = \"1MB\", objects = [] }"], "flows[0].app.size", UnknownKey, "valid keys here: kind, objects, request_size, connection"),
    set(&["flows[0].name=page", "flows[1].name=page.obj1", "flows[0].app={ kind = \"web\", objects = [{ size = \"1MB\" }, { size = \"1KB\", at = \"1s\", connection = \"new\" }] }"], "flows[1].name", Conflict, "flow name 'page.obj1' is already used by flows[0]"),
    set(&["flows[0].app={ kind = \"cloud_gaming\", fps = 0 }"], "flows[0].app.fps", BadValue, "must be between 1 and 1000; write e.g. 60"),
    set(&["flows[0].app={ kind = \"cloud_gaming\", max_bitrate = \"fast\" }"], "flows[0].app.max_bitrate", BadValue, "\"fast\" is not a rate; write e.g. \"40Mbit\""),
    set(&["flows[0].app={ kind = \"cloud_gaming\", max_bitrate = \"500kbit\" }"], "flows[0].app.max_bitrate", Conflict, "min_bitrate (1Mbit) is above max_bitrate (500kbit); write e.g. \"40Mbit\""),
    set(&["flows[0].app={ kind = \"cloud_gaming\", min_bitrate = \"50Mbit\" }"], "flows[0].app.min_bitrate", Conflict, "min_bitrate (50Mbit) is above max_bitrate (40Mbit); write e.g. \"1Mbit\""),
    set(&["flows[0].app={ kind = \"cloud_gaming\", start_bitrate = \"50Mbit\" }"], "flows[0].app.start_bitrate", Conflict, "50Mbit is outside min_bitrate..max_bitrate (1Mbit..40Mbit); write e.g. \"40Mbit\""),
    // web_browse: a page model that cannot be sampled
    set(&["flows[0].app={ kind = \"web_browse\", html_size_min = \"3MB\" }"], "flows[0].app.html_size_min", Conflict, "html_size_max (2000000 B) is below html_size_min (3000000 B)"),
    set(&["flows[0].app={ kind = \"web_browse\", object_size_min = \"10KB\", object_size_max = \"1KB\" }"], "flows[0].app.object_size_max", Conflict, "object_size_max (1000 B) is below object_size_min (10000 B)"),
    set(&["flows[0].app={ kind = \"web_browse\", objects_cap = 1 }"], "flows[0].app.objects_cap", Conflict, "objects_cap (1) is below objects_scale (2)"),
    set(&["flows[0].app={ kind = \"web_browse\", objects_shape = 0 }"], "flows[0].app.objects_shape", BadValue, "0"),
    set(&["flows[0].app={ kind = \"web_browse\", html_size_sigma = -1.0 }"], "flows[0].app.html_size_sigma", BadValue, "-1"),
    set(&["flows[0].app={ kind = \"web_browse\", reading_time = \"-30s\" }"], "flows[0].app.reading_time", BadValue, "\"-30s\" is negative; write e.g. \"30s\""),
    // web_browse: connections, "multiplexed" or 1..=255 HTTP/1.1 connections
    set(&["flows[0].app={ kind = \"web_browse\", connections = 0 }"], "flows[0].app.connections", BadValue, "0 is out of range; must be between 1 and 255; write e.g. 6"),
    set(&["flows[0].app={ kind = \"web_browse\", connections = 256 }"], "flows[0].app.connections", BadValue, "256 is out of range; must be between 1 and 255"),
    set(&["flows[0].app={ kind = \"web_browse\", connections = \"http1\" }"], "flows[0].app.connections", BadValue, "\"http1\" is neither \"multiplexed\" (one HTTP/2-style connection) nor a count of HTTP/1.1 connections (1 to 255); write e.g. 6"),
    set(&["flows[0].app={ kind = \"web_browse\", connections = 6.0 }"], "flows[0].app.connections", WrongType, "expected \"multiplexed\" or a count of HTTP/1.1 connections, found a float (6); write e.g. 6"),
    set(&["flows[0].name=b", "flows[1].name=b.1", "flows[0].app={ kind = \"web_browse\", connections = 2 }"], "flows[1].name", Conflict, "flow name 'b.1' is already used by flows[0]"),
    set(&["flows[0].app={ kind = \"web_browse\", connections = 6 }", "flows[0].transport={ protocol = \"quic\" }"], "flows[0].app.connections", Conflict, "parallel HTTP/1.1 connections run over TCP"),
    set(&["flows[0].app={ kind = \"cloud_gaming\", min_bitrate = \"0bit\" }"], "flows[0].app.min_bitrate", BadValue, "must be greater than zero"),
    set(&["flows[0].app={ kind = \"cloud_gaming\", late_threshold = \"0ms\" }"], "flows[0].app.late_threshold", BadValue, "must be greater than zero; write e.g. \"50ms\""),
    set(&["flows[0].app={ kind = \"cloud_gaming\", bitrate = \"1Mbit\" }"], "flows[0].app.bitrate", UnknownKey, "valid keys here: kind, fps, start_bitrate, min_bitrate, max_bitrate, late_threshold, stall_threshold"),
    set(&["flows[0].app={ kind = \"video_call\", stall_threshold = \"-1ms\" }"], "flows[0].app.stall_threshold", BadValue, "is negative"),
    set(&["flows[0].app={ kind = \"video_call\", fps = 30.5 }"], "flows[0].app.fps", WrongType, "expected an integer"),
    set(&["flows[0].app={ kind = \"video_call\", frame_size = \"1KB\" }"], "flows[0].app.frame_size", UnknownKey, "valid keys here: kind, fps"),
    set(&["flows[0].app={ kind = \"ping\", interval = \"0ms\" }"], "flows[0].app.interval", BadValue, "must be greater than zero"),
    set(&["flows[0].app={ kind = \"ping\", size = \"2000B\" }"], "flows[0].app.size", BadValue, "must be between 0 B and 1472 B"),
    set(&["flows[0].app={ kind = \"ping\", ecn = \"ce\" }"], "flows[0].app.ecn", UnknownName, "choose one of: "),
    set(&["flows[0].app={ kind = \"ping\", rate = \"1Mbit\" }"], "flows[0].app.rate", UnknownKey, "valid keys here: kind, interval, size, ecn, timeout"),
    set(&["flows[0].app={ kind = \"cbr\", rate = \"0Mbit\" }"], "flows[0].app.rate", BadValue, "must be greater than zero; write e.g. \"1Mbit\""),
    set(&["flows[0].app={ kind = \"cbr\", rate = \"fast\" }"], "flows[0].app.rate", BadValue, "\"fast\" is not a rate; write e.g. \"1Mbit\""),
    set(&["flows[0].app={ kind = \"cbr\", size = \"0B\" }"], "flows[0].app.size", BadValue, "0 B is out of range; must be between 1 B and 65507 B; write e.g. \"1200B\""),
    set(&["flows[0].app={ kind = \"cbr\", size = \"65508B\" }"], "flows[0].app.size", BadValue, "65508 B is out of range; must be between 1 B and 65507 B; write e.g. \"1200B\""),
    set(&["flows[0].app={ kind = \"cbr\", size = 1200 }"], "flows[0].app.size", BadValue, "has no unit"),
    set(&["flows[0].app={ kind = \"cbr\", ecn = \"ce\" }"], "flows[0].app.ecn", UnknownName, "choose one of: "),
    set(&["flows[0].app={ kind = \"cbr\", interval = \"10ms\" }"], "flows[0].app.interval", UnknownKey, "valid keys here: kind, rate, size, ecn"),
    set(&["flows[0].app={ kind = \"screen_share\", max_fps = 0 }"], "flows[0].app.max_fps", BadValue, "must be between 1 and 1000"),
    set(&["flows[0].app={ kind = \"screen_share\", frame_size = \"0B\" }"], "flows[0].app.frame_size", BadValue, "must be greater than zero"),
    set(&["flows[0].app=video"], "flows[0].app", UnknownName, "unknown app 'video'; choose one of: bulk, file, ping, cbr, screen_share, web, web_browse, cloud_gaming, video_call, video_stream"),
    set(&["flows[0].app=file"], "flows[0].app.size", Missing, "write e.g. app = { kind = \"file\", size = \"10MB\" }"),
    set(&["flows[0].app={ kind = \"file\" }"], "flows[0].app.size", Missing, "write e.g. size = \"10MB\""),
    set(&["flows[0].app={ kind = \"file\", size = \"0B\" }"], "flows[0].app.size", BadValue, "must be greater than zero"),
    set(&["flows[0].app.kind=file", "flows[0].app.size=10"], "flows[0].app.size", BadValue, "10 has no unit (a bare number is ambiguous); write e.g. \"10MB\""),
    set(&["flows[0].app.kind=file", "flows[0].app.size=10Mb"], "flows[0].app.size", BadValue, "unknown size unit 'Mb'"),
    set(&["flows[0].app={ kind = \"bulk\", size = \"1MB\" }"], "flows[0].app.size", UnknownKey, "valid keys here: kind"),
    set(&["flows[0].app={ kind = \"file\", size = \"1MB\", x = 1 }"], "flows[0].app.x", UnknownKey, "valid keys here: kind, size"),
    set(&["flows[0].app.size=1MB"], "flows[0].app.kind", Missing, "write e.g. kind = \"file\""),
    set(&["flows[0].app=5"], "flows[0].app", WrongType, "expected a name or a table with `kind`"),
    // transport
    set(&["flows[0].transport=5"], "flows[0].transport", WrongType, "write e.g. [flows.transport] with mss = 1448"),
    set(&["flows[0].transport.x=1"], "flows[0].transport.x", UnknownKey, "valid keys here: mss, initial_window, delayed_ack, delayed_ack_timeout, min_rto, rto_formula, tlp, frto, undo, dsack, pacing, send_buffer, notsent_lowat, receive_buffer"),
    set(&["flows[0].transport.rto_formula=bsd"], "flows[0].transport.rto_formula", UnknownName, "unknown rto_formula 'bsd'; choose one of: rfc6298, linux"),
    set(&["flows[0].transport.mss=100"], "flows[0].transport.mss", BadValue, "100 is out of range; must be between 536 and 9000; write e.g. 1448"),
    set(&["flows[0].transport.mss=10KB"], "flows[0].transport.mss", BadValue, "10000 is out of range"),
    set(&["flows[0].transport.mss=1.5"], "flows[0].transport.mss", BadValue, "1.5 has no unit"),
    set(&["flows[0].transport.initial_window=0"], "flows[0].transport.initial_window", BadValue, "must be between 1 and 4294967295; write e.g. 10"),
    set(&["flows[0].transport.delayed_ack=1"], "flows[0].transport.delayed_ack", WrongType, "expected true or false"),
    set(&["flows[0].transport.delayed_ack_timeout=0ms"], "flows[0].transport.delayed_ack_timeout", BadValue, "must be greater than zero; write e.g. \"40ms\""),
    set(&["flows[0].transport.min_rto=fast"], "flows[0].transport.min_rto", BadValue, "write e.g. \"200ms\""),
    set(&["flows[0].transport.pacing=yes"], "flows[0].transport.pacing", WrongType, "expected true or false"),
    set(&["flows[0].transport.fastopen=1"], "flows[0].transport.fastopen", WrongType, "expected true or false, found an integer (1); write e.g. true"),
    set(&["flows[0].transport.send_buffer=1KB"], "flows[0].transport.send_buffer", Conflict, "1000 B is smaller than one segment (mss = 1448 B)"),
    set(&["flows[0].transport.receive_buffer=1KB"], "flows[0].transport.receive_buffer", Conflict, "smaller than one segment"),
    set(&["flows[0].transport.send_buffer=1MiB", "flows[0].transport.notsent_lowat=2MiB"], "flows[0].transport.notsent_lowat", Conflict, "2097152 B is larger than send_buffer (1048576 B)"),
    set(&["flows[0].transport.notsent_lowat=0B"], "flows[0].transport.notsent_lowat", BadValue, "must be greater than zero"),
];

/// Some guidance must follow the problem: an example or the valid choices.
fn has_guidance(msg: &str) -> bool {
    [
        "write e.g. ",
        "choose one of: ",
        "valid keys here: ",
        "reads format = 1",
    ]
    .iter()
    .any(|g| msg.contains(g))
}

#[test]
fn every_error_names_its_path_and_an_example() {
    let mut failures = Vec::new();
    for (i, c) in CASES.iter().enumerate() {
        let got = parse_set(c.text, c.sets);
        let e = match got {
            Ok(_) => {
                failures.push(format!(
                    "case {i} {:?}: parsed, expected an error at {}",
                    c.sets, c.path
                ));
                continue;
            }
            Err(e) => e,
        };
        let msg = e.to_string();
        let ok = e.path() == Some(c.path)
            && e.problem() == Some(c.problem)
            && msg.starts_with(&format!("{}: ", c.path))
            && msg.contains(c.fragment)
            && has_guidance(&msg);
        if !ok {
            failures.push(format!(
                "case {i} {:?}: want {} {:?} containing {:?}\n      got {:?} {msg}",
                c.sets,
                c.path,
                c.problem,
                c.fragment,
                e.problem()
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        CASES.len(),
        failures.join("\n")
    );
}

#[test]
fn design_examples_verbatim() {
    let e = parse_set(BASE, &["bottleneck.down.rate=fast"]).unwrap_err();
    assert_eq!(
        e.to_string(),
        r#"bottleneck.down.rate: "fast" is not a rate; write e.g. "20Mbit""#
    );
    let e = parse_set(BASE, &["bottleneck.rtt=20ms"]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "bottleneck.rtt: unknown key; valid keys here: rate, delay, buffer, qdisc, loss, ecn_rewrite, down, up"
    );
    let e = parse(NO_DURATION).unwrap_err();
    assert_eq!(
        e.to_string(),
        r#"duration: missing; write e.g. duration = "30s""#
    );
    let e = parse_set(BASE, &["format=2"]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "format: unsupported version 2; this l4slab reads format = 1"
    );
    let e = parse_set(BASE, &["flows[0].cc=foo"]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "flows[0].cc: unknown congestion control 'foo'; choose one of: reno, cubic"
    );
    let e = parse_set(BASE, &["bottleneck.qdisc=x"]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "bottleneck.qdisc: unknown qdisc 'x'; choose one of: fifo, codel, fq_codel, pie, fq_pie, dualpi2, red"
    );
}

#[test]
fn syntax_errors_report_line_and_column() {
    let e = parse("format = 1\nduration = 30s\n").unwrap_err();
    match &e {
        ScenarioError::Syntax {
            source_name,
            line,
            column,
            ..
        } => {
            assert_eq!(
                (source_name.as_str(), *line, *column),
                ("test.toml", 2, 14),
                "{e}"
            );
        }
        other => panic!("{other}"),
    }
    assert!(
        e.to_string()
            .starts_with("test.toml:2:14: TOML syntax error: "),
        "{e}"
    );
    // Duplicate keys are syntax errors too.
    let e = parse("format = 1\nformat = 1\n").unwrap_err();
    assert!(matches!(e, ScenarioError::Syntax { line: 2, .. }), "{e}");
}

#[test]
fn malformed_overrides_name_the_argument() {
    let cases = [
        ("bottleneck.rate", "--set bottleneck.rate: expected key.path=value; write e.g. --set bottleneck.rate=50Mbit"),
        ("flows[x].cc=reno", "--set flows[x].cc=reno: bad index in 'flows[x]'"),
        ("flows[0.cc=reno", "--set flows[0.cc=reno: bad index"),
        ("=5", "--set =5: empty key path"),
        ("a..b=1", "--set a..b=1: '' is not a key"),
        ("flows[3].cc=reno", "--set flows[3].cc=reno: index 3 is out of range: flows has 1 entries (use 1 to append one)"),
        ("bottleneck.rate.x=1", "--set bottleneck.rate.x=1: bottleneck.rate is a string (\"20Mbit\"), not a table, so it has no key 'x'; set bottleneck.rate itself"),
    ];
    for (arg, want) in cases {
        let e = parse_set(BASE, &[arg]).unwrap_err();
        assert!(matches!(e, ScenarioError::Override { .. }), "{arg}: {e}");
        assert!(
            e.to_string().starts_with(want),
            "{arg}:\n got {e}\nwant {want}"
        );
    }
}

#[test]
fn unreadable_file_is_an_io_error() {
    let e = parse_file(
        std::path::Path::new("/nonexistent/x.toml"),
        &[],
        &common::opts(),
    )
    .unwrap_err();
    assert!(matches!(e, ScenarioError::Io { .. }), "{e}");
    assert!(
        e.to_string()
            .starts_with("/nonexistent/x.toml: cannot read: "),
        "{e}"
    );
}

/// A suggestion (the text after `write e.g. `) for the error at `path`, as
/// the key whose old content it replaces and the `--set` arguments that write
/// it: a value for the path; a `--set` argument; `[table] with k = v, ...`
/// (that table, with those keys); `k = v` lines (`, `-separated), each for the
/// path's last key or one of its parents (`app = { ... }` for
/// `flows[0].app.size`), else a key to add beside it (`l_aqm = "ramp"` for
/// `bottleneck.qdisc.min_th`); optionally followed by ` under [table] ...`
/// (where the line may go: the first place named).
fn suggestion_as_set(path: &str, example: &str) -> (String, Vec<String>) {
    if let Some(set) = example.strip_prefix("--set ") {
        return (set_key(set).to_string(), vec![set.to_string()]);
    }
    if let Some((table, keys)) = example.split_once(" with ") {
        let value = if table.starts_with("[[") {
            format!("[{{ {keys} }}]")
        } else {
            format!("{{ {keys} }}")
        };
        let name = table.trim_matches(|c| c == '[' || c == ']');
        // `[flows.transport]` in a file is the last `[[flows]]` entry's: here, the path's.
        let name = match (name.strip_prefix("flows."), path.split_once("].")) {
            (Some(rest), Some((entry, _))) if path.starts_with("flows[") => {
                format!("{entry}].{rest}")
            }
            _ => name.to_string(),
        };
        return (name.clone(), vec![format!("{name}={value}")]);
    }
    // `rate = "20Mbit" under [bottleneck] (both directions) or ...`: the first place.
    if let Some((line, place)) = example.split_once(" under [") {
        let table = place.split(']').next().unwrap_or(place);
        if let Some((key, value)) = line.split_once(" = ") {
            let at = format!("{table}.{key}");
            return (at.clone(), vec![format!("{at}={value}")]);
        }
    }
    let pairs: Vec<(&str, &str)> = split_top(example)
        .into_iter()
        .map(|p| p.split_once(" = "))
        .map(|kv| {
            kv.filter(|(k, _)| {
                !k.is_empty() && k.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
            })
        })
        .collect::<Option<_>>()
        .unwrap_or_default();
    if pairs.is_empty() {
        return (path.to_string(), vec![format!("{path}={example}")]);
    }
    let mut replaced = path.to_string();
    let mut sets = Vec::new();
    for (key, value) in pairs {
        // The path up to `key`, if `key` is on it; else `key` beside its last key.
        let mut at = None;
        let mut end = path.len();
        loop {
            let here = &path[..end];
            let last = here.rsplit('.').next().unwrap_or(here);
            if last == key || (last.split('[').next() == Some(key) && !last.ends_with(']')) {
                at = Some(here.to_string());
                break;
            }
            match here.rfind('.') {
                Some(dot) => end = dot,
                None => break,
            }
        }
        let at = match at {
            Some(here) => {
                replaced = here.clone();
                here
            }
            None => match path.rsplit_once('.') {
                Some((table, _)) => format!("{table}.{key}"),
                None => key.to_string(),
            },
        };
        sets.push(format!("{at}={value}"));
    }
    (replaced, sets)
}

/// `text` split at the `, ` outside quotes, brackets and braces.
fn split_top(text: &str) -> Vec<&str> {
    let (mut depth, mut quoted, mut start) = (0i32, false, 0);
    let mut parts = Vec::new();
    let bytes = text.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        match b {
            b'"' => quoted = !quoted,
            b'[' | b'{' if !quoted => depth += 1,
            b']' | b'}' if !quoted => depth -= 1,
            b',' if !quoted && depth == 0 && bytes.get(i + 1) == Some(&b' ') => {
                parts.push(&text[start..i]);
                start = i + 2;
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts
}

/// The key an `--set` argument writes.
fn set_key(set: &str) -> &str {
    set.split_once('=').map_or(set, |(k, _)| k)
}

/// `text` without what it writes at `path` (dotted keys, `name[i]` indices
/// into arrays), as TOML.
fn without(text: &str, path: &str) -> String {
    fn remove(table: &mut toml::Table, keys: &[&str]) {
        let Some((key, rest)) = keys.split_first() else {
            return;
        };
        let (name, index) = match key.split_once('[') {
            Some((n, i)) => (n, i.trim_end_matches(']').parse::<usize>().ok()),
            None => (*key, None),
        };
        match (table.get_mut(name), index, rest.is_empty()) {
            (Some(_), None, true) => {
                table.remove(name);
            }
            (Some(toml::Value::Array(a)), Some(j), true) if j < a.len() => {
                a.remove(j);
            }
            (Some(toml::Value::Array(a)), Some(j), false) => {
                if let Some(toml::Value::Table(t)) = a.get_mut(j) {
                    remove(t, rest);
                }
            }
            (Some(toml::Value::Table(t)), None, false) => remove(t, rest),
            _ => {}
        }
    }
    let mut doc: toml::Table = toml::from_str(text).expect("case text is TOML");
    remove(&mut doc, &path.split('.').collect::<Vec<_>>());
    toml::to_string(&doc).expect("serializable")
}

#[test]
fn every_suggestion_is_accepted_when_applied() {
    // Each error's "write e.g." suggestion, written in place of what the case
    // wrote at the key it names (and under it), must make the scenario valid:
    // advice that is itself refused sends the user round in circles.
    let mut failures = Vec::new();
    let mut applied = 0;
    for (i, c) in CASES.iter().enumerate() {
        let Err(ScenarioError::Invalid {
            path,
            example: Some(example),
            ..
        }) = parse_set(c.text, c.sets)
        else {
            continue;
        };
        let (key, fixes) = suggestion_as_set(&path, &example);
        // What the case wrote at the error's path or the suggestion's key goes.
        let under = |k: &str| {
            [path.as_str(), key.as_str()].iter().any(|p| {
                k == *p || k.starts_with(&format!("{p}.")) || k.starts_with(&format!("{p}["))
            })
        };
        let text = without(&without(c.text, &path), &key);
        let mut sets: Vec<&str> = c
            .sets
            .iter()
            .copied()
            .filter(|s| !under(set_key(s)))
            .collect();
        sets.extend(fixes.iter().map(String::as_str));
        applied += 1;
        if let Err(e) = parse_set(&text, &sets) {
            failures.push(format!("case {i} {:?}: applied {fixes:?}: {e}", c.sets));
        }
    }
    assert!(applied >= 140, "only {applied} cases suggest a value");
    assert!(
        failures.is_empty(),
        "{} of {applied} suggestions are refused when applied:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn every_declared_parameter_accepts_its_own_example() {
    // The example an error about a declared parameter shows (its default, or an
    // unset default's example), written alone in its table, is accepted, or
    // the error it meets suggests what to add (and that is accepted).
    let opts = l4slab_scenario::ParseOptions {
        known_cc: l4slab_cc::CC_NAMES.to_vec(),
        trace_dirs: vec![],
    };
    let mut tried = 0;
    let mut failures = Vec::new();
    let parse = |sets: &[String]| l4slab_scenario::parse_with(BASE, "test.toml", sets, &opts);
    let mut try_set = |set: String| {
        tried += 1;
        // Refused alone (a key that needs another): the error's suggestion applied
        // must make it valid; an error without one is guidance, not a suggestion.
        if let Err(ScenarioError::Invalid {
            path,
            example: Some(example),
            ..
        }) = parse(std::slice::from_ref(&set))
        {
            let (_, fixes) = suggestion_as_set(&path, &example);
            let sets: Vec<String> = std::iter::once(set.clone()).chain(fixes.clone()).collect();
            if let Err(e) = parse(&sets) {
                failures.push(format!("{set}: applied {fixes:?}: {e}"));
            }
        }
    };
    for &kind in l4slab_qdisc::QDISC_NAMES {
        for p in l4slab_qdisc::registry::params(kind).unwrap() {
            try_set(format!(
                "bottleneck.qdisc={{ kind = \"{kind}\", {} = {} }}",
                p.name,
                p.example()
            ));
        }
    }
    for &kind in l4slab_cc::CC_NAMES {
        for p in l4slab_cc::registry::kind(kind).unwrap().params {
            try_set(format!(
                "flows[0].cc={{ kind = \"{kind}\", {} = {} }}",
                p.name,
                p.example()
            ));
        }
    }
    for &kind in l4slab_app::APP_NAMES {
        for p in l4slab_app::registry::params(kind).unwrap() {
            try_set(format!(
                "flows[0].app={{ kind = \"{kind}\", {} = {} }}",
                p.name,
                p.example()
            ));
        }
    }
    for p in l4slab_tcp::config::PARAMS {
        try_set(format!("flows[0].transport.{}={}", p.name, p.example()));
    }
    assert!(tried >= 100, "only {tried} parameters");
    assert!(
        failures.is_empty(),
        "{} of {tried} declared examples are refused, suggestion applied:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
