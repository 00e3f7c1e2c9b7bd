// Hosted checkout page script: live status, countdown, copy buttons, refund form. Runs under a
// hash-pinned CSP; talks only to its own origin. The page works without it (reload for status).
(() => {
  var dataNode = document.getElementById('checkout-data');
  if (!dataNode) return;
  var state = JSON.parse(dataNode.textContent);
  var root = document.getElementById('checkout');
  var clockOffset = Date.parse(state.serverTime) - Date.now();
  var redirectTimer = null;
  var pollTimer = null;
  var source = null;
  // Seconds before sending the payer on to the merchant: long enough to read "Payment confirmed".
  var REDIRECT_DELAY_MS = 3000;
  // Fallback polling when server-sent events are unavailable (proxies that buffer streams).
  var POLL_MS = 3000;
  // How long a copy button says "Copied": long enough to see, short enough to copy again.
  var COPIED_MS = 2000;

  function byId(id) {
    return document.getElementById(id);
  }
  function setText(id, text) {
    var node = byId(id);
    if (node) node.textContent = text;
  }
  function unit() {
    return ` ${state.currency}`;
  }
  // Amounts for people: the wire's decimal text padded to at least cents ("19.90"), never past
  // the token's decimals. Text only, so nothing is rounded (the server does the same: displayDecimal).
  function display(text) {
    if (typeof text !== 'string') return text;
    var places = Math.min(2, state.decimals);
    var parts = text.split('.');
    var fraction = parts[1] || '';
    return fraction.length >= places ? text : `${parts[0]}.${fraction.padEnd(places, '0')}`;
  }

  function statusText(s) {
    switch (s.view) {
      case 'awaiting':
        return 'Waiting for your payment.';
      case 'detected':
        return `Payment detected: ${s.confirmations} of ${s.requiredConfirmations} confirmations.`;
      case 'underpaid':
        return `Partly paid: ${display(s.amountRemaining)}${unit()} still to pay.`;
      case 'paid':
        return 'Payment confirmed. Thank you!';
      case 'expired':
        return 'This payment request has expired.';
      case 'failed':
        return 'Payment incomplete: the request expired before the full amount arrived.';
    }
    return s.view;
  }

  function safeHttpUrl(text) {
    if (!text) return null;
    try {
      var url = new URL(text);
      return url.protocol === 'https:' || url.protocol === 'http:' ? url.href : null;
    } catch (e) {
      return null;
    }
  }

  function apply(s) {
    var viewChanged = s.view !== state.view;
    for (var key in s) state[key] = s[key];
    root.setAttribute('data-view', s.view);
    var sections = document.querySelectorAll('[data-views]');
    for (var i = 0; i < sections.length; i++) {
      var views = sections[i].getAttribute('data-views').split(' ');
      // data-or-payable: shown in its views, and in any view while something is left to pay.
      var orPayable = s.payable && sections[i].hasAttribute('data-or-payable');
      sections[i].hidden = views.indexOf(s.view) < 0 && !orPayable;
    }
    var pay = byId('pay');
    if (pay) pay.hidden = !s.payable;
    setText('status', statusText(s));
    setText('pay-amount', display(s.amountRemaining));
    setText('received', display(s.amountReceived));
    setText('remaining', display(s.amountRemaining));
    setText('confirmations', String(s.confirmations));
    setText('required-confirmations', String(s.requiredConfirmations));
    var progress = byId('confirm-progress');
    if (progress) {
      progress.max = Math.max(1, s.requiredConfirmations);
      progress.value = Math.min(s.confirmations, s.requiredConfirmations);
    }
    var tx = byId('tx-hash');
    if (tx) {
      tx.textContent = s.txHash || '';
      tx.parentNode.hidden = !s.txHash;
    }
    if (s.paymentUri) {
      var link = byId('wallet-link');
      if (link) link.href = s.paymentUri;
      var qr = byId('qr');
      var wanted = `${state.qrBase}?amount=${s.amountRemainingBaseUnits}`;
      if (qr && qr.getAttribute('src') !== wanted) qr.setAttribute('src', wanted);
    }
    var refund = byId('refund');
    if (refund) refund.hidden = !s.refundUrl;
    var prove = byId('prove');
    if (prove && s.payable !== undefined) prove.hidden = !s.payable;
    // Only a payment confirmed while the payer watches sends them on (as Stripe and BTCPay do); a
    // payer who comes back to a paid page (e.g. to ask for a refund) stays, with a link back.
    if (s.view === 'paid' && viewChanged) startRedirect();
    if (s.view === 'paid' || s.view === 'expired' || s.view === 'failed') stopLive();
    if (viewChanged) {
      var heading = document.querySelector(`[data-views~="${s.view}"] h2`);
      if (heading && s.view !== 'awaiting') heading.focus({ preventScroll: true });
    }
  }

  function startRedirect() {
    var target = safeHttpUrl(state.successUrl);
    if (!target || redirectTimer) return;
    var note = byId('redirect-note');
    if (note) note.hidden = false;
    redirectTimer = setTimeout(() => {
      window.location.assign(target);
    }, REDIRECT_DELAY_MS);
  }

  function stopLive() {
    if (source) {
      source.close();
      source = null;
    }
    if (pollTimer) {
      clearInterval(pollTimer);
      pollTimer = null;
    }
  }

  function poll() {
    fetch(state.statusPath, { headers: { accept: 'application/json' }, cache: 'no-store' })
      .then((r) => (r.ok ? r.json() : null))
      .then((s) => {
        if (s) apply(s);
      })
      .catch(() => {});
  }

  function startPolling() {
    if (pollTimer) return;
    pollTimer = setInterval(poll, POLL_MS);
  }

  function startLive() {
    if (state.view === 'paid' || state.view === 'expired' || state.view === 'failed') return;
    if (!window.EventSource) {
      startPolling();
      return;
    }
    source = new EventSource(state.eventsPath);
    source.addEventListener('status', (event) => {
      apply(JSON.parse(event.data));
    });
    source.onerror = () => {
      if (source && source.readyState === EventSource.CLOSED) {
        source = null;
        startPolling();
      }
    };
  }

  function tick() {
    var left = Math.max(0, Math.floor((Date.parse(state.expiresAt) - (Date.now() + clockOffset)) / 1000));
    var h = Math.floor(left / 3600),
      m = Math.floor((left % 3600) / 60),
      sec = left % 60;
    var text = `${h > 0 ? `${h}:${String(m).padStart(2, '0')}` : String(m)}:${String(sec).padStart(2, '0')}`;
    setText('countdown', text);
    // Screen readers hear the countdown only at these marks, not every second.
    if (state.view === 'awaiting' || state.view === 'underpaid') {
      if (left === 300 || left === 60) announce(`${left / 60 + (left === 60 ? ' minute' : ' minutes')} left to pay`);
    }
    if (left === 0 && (state.view === 'awaiting' || state.view === 'underpaid')) {
      // Show the expired view at once; the server's answer follows from the feed or a poll.
      var local = {};
      for (var key in state) local[key] = state[key];
      local.view = state.view === 'awaiting' ? 'expired' : 'failed';
      local.payable = false;
      apply(local);
      poll();
    }
  }

  function announce(text) {
    var node = byId('announce');
    if (!node) return;
    node.textContent = '';
    setTimeout(() => {
      node.textContent = text;
    }, 50);
  }

  function copy(button) {
    var target = byId(button.getAttribute('data-copy'));
    if (!target) return;
    var text = target.textContent.trim();
    var done = () => {
      announce(button.getAttribute('data-copied') || 'Copied');
      showCopied(button);
    };
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(done, () => {
        fallbackCopy(target, done);
      });
    } else {
      fallbackCopy(target, done);
    }
  }

  // Visible feedback for sighted users too (the announcement is for screen readers): the button
  // says "Copied" for a moment, then is ready again.
  function showCopied(button) {
    var label = button.querySelector('.copy-label');
    button.setAttribute('data-state', 'copied');
    if (label) label.textContent = 'Copied';
    clearTimeout(button.copiedTimer);
    button.copiedTimer = setTimeout(() => {
      button.removeAttribute('data-state');
      if (label) label.textContent = 'Copy';
    }, COPIED_MS);
  }

  function fallbackCopy(target, done) {
    var range = document.createRange();
    range.selectNodeContents(target);
    var selection = window.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
    try {
      if (document.execCommand('copy')) done();
      else announce('Selected: press Ctrl+C to copy');
    } catch (e) {
      announce('Selected: press Ctrl+C to copy');
    }
  }

  function submitRefund(form) {
    var error = byId('refund-error');
    var result = byId('refund-result');
    error.textContent = '';
    var body = { destination: form.elements.destination.value.trim() };
    if (form.elements.reason.value.trim()) body.reason = form.elements.reason.value.trim();
    if (form.elements.email.value.trim()) body.email = form.elements.email.value.trim();
    var submit = form.querySelector('button[type="submit"]');
    submit.disabled = true;
    fetch(state.refundPath, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json' }, body: JSON.stringify(body) })
      .then((r) => r.json().then((json) => ({ ok: r.ok, json: json })))
      .then((answer) => {
        submit.disabled = false;
        if (!answer.ok) {
          error.textContent = answer.json.error || 'The request failed.';
          form.elements.destination.focus();
          return;
        }
        byId('refund-details').hidden = true;
        result.hidden = false;
        result.textContent =
          'Refund requested (' +
          answer.json.id +
          '). The merchant will review it and send ' +
          display(answer.json.amount) +
          ' ' +
          answer.json.currency +
          ' to ' +
          answer.json.destination +
          '.';
        result.focus();
      })
      .catch(() => {
        submit.disabled = false;
        error.textContent = 'Network error: try again.';
      });
  }

  document.addEventListener('click', (event) => {
    var button = event.target.closest ? event.target.closest('[data-copy]') : null;
    if (button) copy(button);
  });
  var refundForm = byId('refund-form');
  if (refundForm)
    refundForm.addEventListener('submit', (event) => {
      event.preventDefault();
      submitRefund(refundForm);
    });

  apply(state);
  tick();
  setInterval(tick, 1000);
  startLive();
})();
