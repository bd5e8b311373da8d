/** The body of POST /access_tokens (docs/api.md, Access tokens): a name and a role linkage. */
export function accessTokenBody(name: string, role: string) {
  return {
    data: {
      type: 'access_token',
      attributes: { name: name.trim() },
      relationships: { role: { data: { type: 'role', id: role } } },
    },
  };
}
