/**
 * The URI of one member over a direct connection: same scheme, credentials and options as the
 * replica-set URI, one host, `directConnection=true` and no `replicaSet`.
 */
export function directMemberUri(replicaSetUri: string, host: string): string {
  const match = /^(mongodb:\/\/)([^@/?]*@)?([^/?]*)(\/[^?]*)?(\?.*)?$/.exec(replicaSetUri);
  if (!match) {
    throw new Error(
      `Cannot derive a member URI from ${JSON.stringify(replicaSetUri)}: use a mongodb:// URI (mongodb+srv:// hides the members).`,
    );
  }
  const [, scheme, auth = '', , path = '/', query = ''] = match;
  const params = new URLSearchParams(query.slice(1));
  params.delete('replicaSet');
  params.set('directConnection', 'true');
  return `${scheme}${auth}${host}${path}?${params.toString()}`;
}
