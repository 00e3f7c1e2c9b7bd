import { disableDashboardUser, getMerchant, inviteDashboardUser, listDashboardUsers, resetTotp, ROLES, signInLinkUrl } from '../../accounts/index.ts';
import { emit, jsonOption, operatorOf, requireString, UsageError, withStore, type Command } from '../command.ts';

/** `svc users create`: a dashboard user and its single-use sign-in link (the gateway sends no email). */
export const usersCreate: Command = {
  summary: 'add a dashboard user and print its single-use sign-in link (valid 30 minutes)',
  usage: 'svc users create --merchant ID --email EMAIL --role owner|developer|viewer [--json]',
  options: {
    merchant: { type: 'string', description: 'merchant id (mer_…)' },
    email: { type: 'string', description: 'the person’s email (their sign-in name; unique per merchant)' },
    role: { type: 'string', description: `${ROLES.join(', ')}: owner manages everything incl. users, wallets and live keys` },
    ...jsonOption,
  },
  async run({ values, io, json }) {
    const merchantId = requireString(values, 'merchant');
    const email = requireString(values, 'email');
    const role = requireString(values, 'role');
    if (!(ROLES as readonly string[]).includes(role)) throw new UsageError(`--role must be one of ${ROLES.join(', ')}`);
    return withStore(io, async (store, { config }) => {
      if (!(await getMerchant(store, merchantId))) throw new UsageError(`merchant ${merchantId} does not exist`);
      const { user, link } = await inviteDashboardUser(store, { merchantId, email, role, actor: operatorOf(io) });
      const signInUrl = signInLinkUrl(config.publicUrl, link.token);
      emit(
        io,
        json,
        { user, signInUrl, expiresAt: link.expiresAt },
        `Created ${user.role} ${user.id} (${user.email}) for ${merchantId}\n  ${signInUrl}\n  (single use, valid until ${link.expiresAt.toISOString()}; send it to the person yourself)`,
      );
      return 0;
    });
  },
};

/** `svc users list --merchant ID`: a merchant's dashboard users (never a secret). */
export const usersList: Command = {
  summary: 'list a merchant’s dashboard users',
  usage: 'svc users list --merchant ID [--json]',
  options: { merchant: { type: 'string', description: 'merchant id (mer_…)' }, ...jsonOption },
  async run({ values, io, json }) {
    const merchantId = requireString(values, 'merchant');
    return withStore(io, async (store) => {
      const users = await listDashboardUsers(store, merchantId);
      emit(
        io,
        json,
        users,
        users.length === 0
          ? `No dashboard users for ${merchantId}`
          : users
              .map((user) =>
                [
                  user.id,
                  user.email,
                  user.role,
                  user.disabledAt ? `disabled ${user.disabledAt.toISOString()}` : user.hasPassword ? 'active' : 'invited',
                  user.totpEnabled ? '2fa' : 'no 2fa',
                ].join('  '),
              )
              .join('\n'),
      );
      return 0;
    });
  },
};

/** `svc users disable USER_ID`: the user's sessions end at once and it cannot sign in again. */
export const usersDisable: Command = {
  summary: 'disable a dashboard user (its sessions end at once)',
  usage: 'svc users disable USER_ID [--json]',
  options: { ...jsonOption },
  async run({ positionals, io, json }) {
    const id = positionals[0];
    if (!id) throw new UsageError('give the user id (usr_…) to disable');
    return withStore(io, async (store) => {
      const user = await disableDashboardUser(store, { userId: id, actor: operatorOf(io) });
      emit(io, json, user, `Disabled ${user.id} (${user.email}) at ${user.disabledAt!.toISOString()}`);
      return 0;
    });
  },
};

/**
 * `svc users reset-two-factor USER_ID`: turns the user's two-factor sign-in off and ends its
 * sessions (audited as the operator). The way out when a device is lost, or someone enrolled
 * theirs with a stolen session, and no owner of the merchant can reset it from Team.
 */
export const usersResetTwoFactor: Command = {
  summary: 'turn a dashboard user’s two-factor sign-in off and end its sessions (a lost or foreign device)',
  usage: 'svc users reset-two-factor USER_ID [--json]',
  options: { ...jsonOption },
  async run({ positionals, io, json }) {
    const id = positionals[0];
    if (!id) throw new UsageError('give the user id (usr_…) whose two-factor sign-in to reset');
    return withStore(io, async (store) => {
      const user = await resetTotp(store, { userId: id, actor: operatorOf(io), endSessions: true });
      emit(
        io,
        json,
        user,
        `Reset two-factor sign-in of ${user.id} (${user.email}); its sessions ended. It signs in with its password (or a new link) and sets up a device again`,
      );
      return 0;
    });
  },
};
