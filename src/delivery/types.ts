/** The time source of the delivery stage; tests inject one they can move forward. */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

/**
 * A delivery leased to this worker, with everything one attempt needs. `secretSealed` is the
 * endpoint's secret, or for a session's webhookUrl the merchant's secret of the event's mode
 * (null when a merchant from before migration 014 has no sandbox secret yet).
 */
export interface ClaimedDelivery {
  id: string;
  eventId: string;
  eventType: string;
  merchantId: string;
  livemode: boolean;
  endpointId: string | null;
  url: string;
  attemptCount: number;
  body: string;
  secretSealed: string | null;
  /** The secret a rotation replaced, while it still signs beside the current one. */
  previousSecretSealed: string | null;
  /** When the event was committed: the start of the state-change-to-delivery latency. */
  eventCreatedAt: Date;
}

/**
 * How long a claimed delivery stays leased. Longer than the 15 s request timeout plus the time
 * to record the attempt, so a live worker never loses its lease; a crashed worker's deliveries
 * are picked up by another worker a minute later.
 */
export const LEASE_MS = 60_000;
