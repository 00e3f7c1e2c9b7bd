-- 048: x402 for payment links with several payment options (issues 26 and 29). `GET /pay/{id}/x402`
-- of such a link opens a session waiting for the choice (a `session_choices` row whose terms carry
-- the link's id: src/payments/linkChoices.ts), so the agent's payment can choose the pair. The
-- link's cap on open checkouts counts those rows too; this index keeps that count to the link's
-- own unchosen rows.
CREATE INDEX session_choices_link_waiting ON session_choices ((terms ->> 'paymentLinkId'), expires_at) WHERE chosen_at IS NULL;
