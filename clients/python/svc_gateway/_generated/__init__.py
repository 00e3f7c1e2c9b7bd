"""Files generated from the gateway's OpenAPI document (clients/scripts/regenerate.ts)."""
