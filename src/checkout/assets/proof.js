// Hosted checkout: a payer whose payment was not detected proves it by its transaction, signed by
// the wallet that sent it (EIP-1193 `personal_sign` on EVM chains, a Solana wallet's
// `signMessage`), with POST /checkout/{id}/transactions. Signing moves no funds. Only on live
// sessions (the page renders this script only when the instructions carry a proof message).
(() => {
  var state = JSON.parse(document.getElementById('checkout-data').textContent);
  var form = document.getElementById('prove-form');
  if (!form || !state.proofMessage) return;
  var error = document.getElementById('prove-error');
  var result = document.getElementById('prove-result');
  var toHex = (text) => `0x${Array.from(new TextEncoder().encode(text), (byte) => byte.toString(16).padStart(2, '0')).join('')}`;
  var toBase64 = (bytes) => btoa(String.fromCharCode.apply(null, Array.from(bytes)));
  var solanaWallet = () => (window.phantom && window.phantom.solana) || window.solana;

  /** The transaction as the gateway stores it: lowercase hex on EVM chains, the signature as is on solana. */
  var normalize = (text) => (state.chainKind === 'evm' ? text.trim().toLowerCase() : text.trim());

  async function sign(message) {
    if (state.chainKind !== 'evm') {
      var wallet = solanaWallet();
      if (!wallet) throw new Error('No Solana wallet was found in this browser. Open this page in the wallet that paid.');
      await wallet.connect();
      var signed = await wallet.signMessage(new TextEncoder().encode(message), 'utf8');
      return toBase64(signed.signature || signed);
    }
    if (!window.ethereum) throw new Error('No wallet was found in this browser. Open this page in the wallet that paid.');
    var accounts = await window.ethereum.request({ method: 'eth_requestAccounts' });
    if (!accounts || !accounts[0]) throw new Error('The wallet shared no account.');
    return window.ethereum.request({ method: 'personal_sign', params: [toHex(message), accounts[0]] });
  }

  async function prove() {
    error.textContent = '';
    var txHash = normalize(form.elements.txHash.value);
    if (!txHash) {
      error.textContent = 'Paste the transaction hash of your payment.';
      form.elements.txHash.focus();
      return;
    }
    var submit = form.querySelector('button[type="submit"]');
    submit.disabled = true;
    try {
      var signature = await sign(state.proofMessage.replace('{txHash}', txHash));
      var response = await fetch(state.proofPath, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json' },
        body: JSON.stringify({ txHash: txHash, signature: signature }),
      });
      var json = await response.json();
      if (!response.ok) throw new Error(json.error || 'The proof was refused.');
      document.getElementById('prove-details').hidden = true;
      result.hidden = false;
      result.textContent = json.message;
      result.focus();
    } catch (e) {
      error.textContent = (e && (e.message || e.code)) || String(e);
    } finally {
      submit.disabled = false;
    }
  }

  form.addEventListener('submit', (event) => {
    event.preventDefault();
    prove();
  });
})();
