// Bodies are typed as a valid one is; the service validates them.
import type { FormulaRequest } from '../../reactors/formula-input.js';
import { pageQuery } from '../query.js';
import { type AuthenticatedRoute, PAGING } from './route.js';

/** Reactor formulas: the code and declarations reactors are configured from. */
export const formulaRoutes: AuthenticatedRoute[] = [
  {
    method: 'POST',
    path: '/reactor-formulas',
    operationId: 'createReactorFormula',
    auth: true,
    permission: 'reactor:create',
    status: 201,
    body: 'json',
    docs: { summary: 'Create a reactor formula', tag: 'Reactor formulas', requestSchema: 'CreateFormulaRequest', responseSchema: 'Formula' },
    handle: ({ vault, caller, body }) => vault.formulas.create(caller, body as FormulaRequest),
  },
  {
    method: 'GET',
    path: '/reactor-formulas',
    operationId: 'listReactorFormulas',
    auth: true,
    permission: 'reactor:read',
    status: 200,
    docs: { summary: 'List reactor formulas', tag: 'Reactor formulas', responseSchema: 'FormulaList', query: [...PAGING] },
    handle: ({ vault, caller, query }) => vault.formulas.list(caller, pageQuery(query)),
  },
  {
    method: 'GET',
    path: '/reactor-formulas/{id}',
    operationId: 'getReactorFormula',
    auth: true,
    permission: 'reactor:read',
    status: 200,
    docs: { summary: 'Get a reactor formula', tag: 'Reactor formulas', responseSchema: 'Formula' },
    handle: ({ vault, caller, params }) => vault.formulas.get(caller, params['id']!),
  },
  {
    method: 'PUT',
    path: '/reactor-formulas/{id}',
    operationId: 'updateReactorFormula',
    auth: true,
    permission: 'reactor:update',
    status: 200,
    body: 'json',
    docs: { summary: 'Replace a reactor formula', tag: 'Reactor formulas', requestSchema: 'UpdateFormulaRequest', responseSchema: 'Formula' },
    handle: ({ vault, caller, params, body }) => vault.formulas.update(caller, params['id']!, body as FormulaRequest),
  },
  {
    method: 'DELETE',
    path: '/reactor-formulas/{id}',
    operationId: 'deleteReactorFormula',
    auth: true,
    permission: 'reactor:delete',
    status: 204,
    docs: { summary: 'Delete a reactor formula (409 while a reactor uses it)', tag: 'Reactor formulas', extraStatuses: [409] },
    handle: ({ vault, caller, params }) => vault.formulas.delete(caller, params['id']!),
  },
];
