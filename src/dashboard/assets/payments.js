// svc dashboard, payments pages: the home page's volume charts (uPlot, served from node_modules),
// and open <details> kept open across a payment page's live refreshes.
// The figures come from each chart's data-volume attribute (decimal text made on the server from
// base units); they become numbers here only to be drawn. Without this file the page still shows
// the same figures in its tables.
(() => {
  const COLOURS = ['#3a3ab8', '#0b6b3a', '#a4161a', '#8a4b00', '#006d8f', '#6b2fa0'];

  function draw(element) {
    let chart;
    try {
      chart = JSON.parse(element.getAttribute('data-volume') || '');
    } catch {
      return;
    }
    if (!window.uPlot || !chart || !Array.isArray(chart.days)) return;
    const xs = chart.days.map((day) => Date.parse(`${day}T00:00:00Z`) / 1000);
    const data = [xs, ...chart.series.map((series) => series.values.map(Number))];
    const options = {
      width: Math.max(280, element.clientWidth),
      height: 220,
      tzDate: (ts) => window.uPlot.tzDate(new Date(ts * 1000), 'Etc/UTC'),
      scales: { x: { time: true } },
      axes: [{}, { label: chart.currency, size: 64 }],
      series: [
        { label: 'Day (UTC)' },
        ...chart.series.map((series, index) => ({
          label: series.chain,
          stroke: COLOURS[index % COLOURS.length],
          width: 2,
          points: { show: true, size: 5 },
          value: (_plot, value) => (value == null ? '' : `${value} ${chart.currency}`),
        })),
      ],
    };
    element.replaceChildren();
    const plot = new window.uPlot(options, data, element);
    // Follow the container's width (phone rotation, window resize) before the next paint.
    let width = options.width;
    new ResizeObserver(() => {
      const next = Math.max(280, element.clientWidth);
      if (next === width) return;
      width = next;
      plot.setSize({ width, height: 220 });
    }).observe(element);
  }

  // A polled block (a payment's live part) is replaced every few seconds: keep the <details> the
  // person opened (data-keep-open names each one) open in the new copy.
  let opened = new Set();
  document.addEventListener('htmx:beforeSwap', () => {
    opened = new Set([...document.querySelectorAll('details[data-keep-open][open]')].map((details) => details.getAttribute('data-keep-open')));
  });
  document.addEventListener('htmx:afterSettle', () => {
    for (const details of document.querySelectorAll('details[data-keep-open]')) {
      if (opened.has(details.getAttribute('data-keep-open'))) details.open = true;
    }
  });

  function start() {
    for (const element of document.querySelectorAll('.volume-chart[data-volume]')) draw(element);
  }
  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start);
  else start();
})();
