// The webhook benchmark's receiver, in a process of its own (bench/webhooks.ts forks it), so the
// CPU the bench reports per delivery is the gateway's alone: a receiver in the bench's process
// counted its HTTP parsing as the gateway's. node:http on loopback answering 200 at once; each
// event id's arrival time (epoch ms, comparable across processes) is kept here and sent to the
// parent only when asked, so nothing is sent per delivery.
import http from 'node:http';

const arrivals = new Map();
/** Counts the parent waits for: [count, resolve message id]. */
let waiting = [];

const answerWaiters = () => {
  const reached = waiting.filter(([count]) => arrivals.size >= count);
  waiting = waiting.filter(([count]) => arrivals.size < count);
  for (const [, id] of reached) process.send({ type: 'reached', id });
};

const server = http.createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    arrivals.set(String(req.headers['x-service-event-id']), performance.timeOrigin + performance.now());
    res.writeHead(200).end();
    if (waiting.length > 0) answerWaiters();
  });
});
server.keepAliveTimeout = 30_000;

process.on('message', (message) => {
  if (message.type === 'until') {
    waiting.push([message.count, message.id]);
    answerWaiters();
  } else if (message.type === 'clear') {
    arrivals.clear();
    process.send({ type: 'cleared', id: message.id });
  } else if (message.type === 'arrivals') {
    process.send({ type: 'arrivals', id: message.id, arrivals: [...arrivals], cpuMicros: process.cpuUsage() });
  } else if (message.type === 'close') {
    server.closeAllConnections();
    server.close(() => process.exit(0));
  }
});

server.listen(0, '127.0.0.1', () => process.send({ type: 'ready', url: `http://127.0.0.1:${server.address().port}/hook` }));
