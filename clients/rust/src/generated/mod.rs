//! Generated from the gateway's OpenAPI document by `npx tsx clients/scripts/regenerate.ts`.

pub mod resources;
pub mod types;
