// svc dashboard, Refunds: sends the refund from a browser wallet (EIP-1193) on EVM chains: an
// ERC-20 transfer(to, amount) from the payment's receiving wallet, on the payment's chain, then
// puts the transaction hash in the form. Without a browser wallet the QR code and the wallet
// link do the same, and the hash is pasted.
(() => {
  const word = (hex) => hex.replace(/^0x/, '').toLowerCase().padStart(64, '0');
  document.addEventListener('click', async (event) => {
    const button = event.target instanceof Element ? event.target.closest('[data-refund-send]') : null;
    if (!button) return;
    const status = document.getElementById('send-status');
    const say = (text) => {
      if (status) status.textContent = text;
    };
    try {
      if (!window.ethereum) throw new Error('no browser wallet found (window.ethereum); scan the code or open the request in a wallet instead');
      const from = button.getAttribute('data-from');
      const chainId = button.getAttribute('data-chain-id');
      say('Waiting for your wallet…');
      const accounts = await window.ethereum.request({ method: 'eth_requestAccounts' });
      const account = (accounts || []).find((candidate) => candidate.toLowerCase() === from.toLowerCase());
      if (!account) throw new Error(`the wallet's account is ${accounts?.[0]}, not the receiving wallet ${from}: switch accounts in the wallet`);
      const current = await window.ethereum.request({ method: 'eth_chainId' });
      if (BigInt(current) !== BigInt(chainId)) await window.ethereum.request({ method: 'wallet_switchEthereumChain', params: [{ chainId }] });
      const data = `0xa9059cbb${word(button.getAttribute('data-to'))}${word(BigInt(button.getAttribute('data-amount')).toString(16))}`;
      const hash = await window.ethereum.request({
        method: 'eth_sendTransaction',
        params: [{ from: account, to: button.getAttribute('data-token'), data, value: '0x0' }],
      });
      document.getElementById('tx-hash').value = hash;
      say(`Sent: ${hash}. Complete the refund once it is confirmed.`);
    } catch (error) {
      say(`The wallet did not send: ${(error && (error.message || error.code)) || error}`);
    }
  });
})();
