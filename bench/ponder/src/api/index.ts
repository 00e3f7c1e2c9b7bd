import { Hono } from 'hono';

// Ponder 0.10+ requires an API file; the bench reads the table directly and serves nothing.
export default new Hono();
