import { scramClient } from './scram';

// RFC 7677, section 3: user "user", password "pencil", SCRAM-SHA-256.
const NONCE = 'rOprNGfwEbeRWgbNEkqO';
const SERVER_FIRST = 'r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096';
const CLIENT_FINAL = 'c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=';
const SERVER_FINAL = 'v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=';

describe('SCRAM client', () => {
  it('reproduces the RFC 7677 exchange and accepts its server signature', async () => {
    const client = scramClient('sha256', 'user', 'pencil', NONCE);
    expect(client.first).toBe(`n,,n=user,r=${NONCE}`);
    expect(await client.final(SERVER_FIRST)).toBe(CLIENT_FINAL);
    expect(() => client.verify(SERVER_FINAL)).not.toThrow();
  });

  it('refuses a server signature made without the password', async () => {
    const client = scramClient('sha256', 'user', 'pencil', NONCE);
    await client.final(SERVER_FIRST);
    expect(() => client.verify('v=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=')).toThrow(/does not know the password/);
    expect(() => client.verify('v=')).toThrow(/does not know the password/);
  });

  it('derives another proof for another password or hash', async () => {
    const other = scramClient('sha256', 'user', 'pencil2', NONCE);
    expect(await other.final(SERVER_FIRST)).not.toBe(CLIENT_FINAL);
    const sha512 = scramClient('sha512', 'user', 'pencil', NONCE);
    const proof = (await sha512.final(SERVER_FIRST)).split(',p=')[1];
    expect(Buffer.from(proof, 'base64')).toHaveLength(64);
  });

  it('escapes = and , in the user name', () => {
    expect(scramClient('sha256', 'a=b,c', 'x', NONCE).first).toBe(`n,,n=a=3Db=2Cc,r=${NONCE}`);
  });

  it.each([
    ['a nonce that does not extend the client nonce', 'r=other,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096', /nonce/],
    ['the client nonce echoed unchanged', `r=${NONCE},s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096`, /nonce/],
    ['no salt', `r=${NONCE}xyz,i=4096`, /salt/],
    ['too few iterations', `r=${NONCE}xyz,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=1`, /iteration/],
    ['iterations meant to burn CPU', `r=${NONCE}xyz,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=2000000000`, /iteration/],
    ['more iterations than Kafka allows', `r=${NONCE}xyz,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=16385`, /iteration/],
    ['iterations that are not a number', `r=${NONCE}xyz,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=lots`, /iteration/],
    ['a server error', 'e=unknown-user', /unknown-user/],
  ])('refuses a server-first message with %s', async (_case, serverFirst, message) => {
    await expect(scramClient('sha256', 'user', 'pencil', NONCE).final(serverFirst)).rejects.toThrow(message);
  });

  it('refuses a server-final message before the server-first one, or carrying an error', async () => {
    expect(() => scramClient('sha256', 'user', 'pencil', NONCE).verify(SERVER_FINAL)).toThrow(/before server-first/);
    const client = scramClient('sha256', 'user', 'pencil', NONCE);
    await client.final(SERVER_FIRST);
    expect(() => client.verify('e=invalid-proof')).toThrow(/invalid-proof/);
  });

  it('makes a fresh random nonce per exchange', () => {
    expect(scramClient('sha256', 'u', 'p').first).not.toBe(scramClient('sha256', 'u', 'p').first);
  });
});
