"""Provider adapters: canonical messages ⇄ each provider API's wire format, one folder per provider."""
