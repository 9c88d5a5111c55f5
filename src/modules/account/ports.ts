import type { EntityManager } from 'typeorm';
import type { SignInMethodRecord } from '../signin/entities.js';

/**
 * The sign-in methods and sessions rows the account service reads and removes. Declared here, by
 * the module that needs them, because a module never imports another's store (eslint.config.js,
 * the layer zones): src/app.ts passes the sign-in store, which has these methods; `withManager`
 * gives the same inside a transaction the account service started.
 */
export interface AccountSignInRows {
  withManager(manager: EntityManager): AccountSignInRows;
  methodsOf(personId: string): Promise<SignInMethodRecord[]>;
  /** The person's methods, locked for the rest of the transaction, oldest first. */
  lockMethodsOf(personId: string): Promise<SignInMethodRecord[]>;
  deleteMethod(id: string): Promise<void>;
  /** The ids of the open sessions the method started. */
  sessionsStartedWith(signInMethodId: string): Promise<string[]>;
}
