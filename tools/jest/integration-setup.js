// Integration tests talk to real brokers and servers: allow them two minutes each.
jest.setTimeout(120_000);
