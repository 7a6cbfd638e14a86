"""AWS Bedrock: the Converse and ConverseStream APIs (docs/adapters/bedrock.md)."""
