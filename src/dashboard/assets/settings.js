// svc dashboard, Settings: fills the wallet address from a browser wallet and signs the ownership
// challenge with it (EIP-1193 `personal_sign` on EVM chains; a Solana wallet's `signMessage`).
// Without a browser wallet the page still works: paste the address and the signature.
(() => {
  const status = (form, text) => {
    const node = form.querySelector('[data-wallet-status]');
    if (node) node.textContent = text;
  };
  const errorText = (error) => (error && (error.message || error.code)) || String(error);
  const toHex = (text) => `0x${Array.from(new TextEncoder().encode(text), (byte) => byte.toString(16).padStart(2, '0')).join('')}`;
  const toBase64 = (bytes) => btoa(String.fromCharCode(...bytes));
  const solanaWallet = () => window.phantom?.solana || window.solana;

  async function evmAccount() {
    if (!window.ethereum) throw new Error('no browser wallet found (window.ethereum); paste the address and the signature instead');
    const accounts = await window.ethereum.request({ method: 'eth_requestAccounts' });
    if (!accounts?.[0]) throw new Error('the wallet shared no account');
    return accounts;
  }

  async function solanaAccount() {
    const wallet = solanaWallet();
    if (!wallet) throw new Error('no Solana browser wallet found (window.solana); paste the address and the signature instead');
    const connected = await wallet.connect();
    return (connected?.publicKey || wallet.publicKey).toString();
  }

  document.addEventListener('click', async (event) => {
    const target = event.target instanceof Element ? event.target : null;
    const connect = target?.closest('[data-wallet-connect]');
    const sign = target?.closest('[data-wallet-sign]');
    if (!connect && !sign) return;
    const form = (connect || sign).closest('form');
    try {
      if (connect) {
        const chain = form.querySelector('[name="chain"]').value;
        status(form, 'Waiting for your wallet…');
        const address = chain === 'solana' ? await solanaAccount() : (await evmAccount())[0];
        form.querySelector('[name="address"]').value = address;
        status(form, `Address filled from your wallet: ${address}`);
        return;
      }
      const chain = form.getAttribute('data-chain');
      const address = form.getAttribute('data-address');
      const message = document.getElementById('challenge-message').textContent;
      status(form, 'Waiting for your wallet to sign…');
      let signature;
      if (chain === 'solana') {
        const owner = await solanaAccount();
        if (owner !== address) throw new Error(`the wallet's account is ${owner}, not ${address}: switch accounts in the wallet`);
        const signed = await solanaWallet().signMessage(new TextEncoder().encode(message), 'utf8');
        signature = toBase64(signed.signature || signed);
      } else {
        const accounts = await evmAccount();
        const account = accounts.find((candidate) => candidate.toLowerCase() === address.toLowerCase());
        if (!account) throw new Error(`the wallet's account is ${accounts[0]}, not ${address}: switch accounts in the wallet`);
        signature = await window.ethereum.request({ method: 'personal_sign', params: [toHex(message), account] });
      }
      form.querySelector('[name="signature"]').value = signature;
      status(form, 'Signed. Adding the wallet…');
      form.requestSubmit();
    } catch (error) {
      status(form, `The wallet did not sign: ${errorText(error)}`);
    }
  });
})();
