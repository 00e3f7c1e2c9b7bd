import { Counter, Histogram, type Registry } from 'prom-client';

/** The delivery stage's Prometheus metrics, registered on the daemon's registry. */
export interface DeliveryMetrics {
  attempts: Counter<'outcome'>;
  attemptDuration: Histogram;
  eventToDelivery: Histogram;
  endpointsDisabled: Counter;
}

export function createDeliveryMetrics(registry: Registry): DeliveryMetrics {
  const existing = registry.getSingleMetric('svc_delivery_attempts_total');
  if (existing) {
    return {
      attempts: existing as Counter<'outcome'>,
      attemptDuration: registry.getSingleMetric('svc_delivery_attempt_duration_seconds') as Histogram,
      eventToDelivery: registry.getSingleMetric('svc_delivery_event_to_delivery_seconds') as Histogram,
      endpointsDisabled: registry.getSingleMetric('svc_delivery_endpoints_disabled_total') as Counter,
    };
  }
  return {
    attempts: new Counter({
      name: 'svc_delivery_attempts_total',
      help: 'Webhook delivery attempts by outcome (succeeded, retry, failed, endpoint_disabled)',
      labelNames: ['outcome'],
      registers: [registry],
    }),
    attemptDuration: new Histogram({
      name: 'svc_delivery_attempt_duration_seconds',
      help: 'Duration of one webhook HTTP attempt',
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 15],
      registers: [registry],
    }),
    eventToDelivery: new Histogram({
      name: 'svc_delivery_event_to_delivery_seconds',
      help: 'From the commit of an event to its first successful delivery to a target',
      buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5, 30, 300, 3600, 86400],
      registers: [registry],
    }),
    endpointsDisabled: new Counter({
      name: 'svc_delivery_endpoints_disabled_total',
      help: 'Webhook endpoints disabled automatically (410 Gone or 5 days of failures)',
      registers: [registry],
    }),
  };
}
