"""The engine: plan -> conversation modes -> checks -> results, with events and a store."""
